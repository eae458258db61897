"""Helper process for the death-signal test: start tritonserver, report pids, then wait to be killed.

usage: python triton_parent_helper.py <model_repository> <log_file>
Prints one JSON line {"server": pid, "stubs": [pids], "ports": [http, grpc, metrics]}.
"""
import json
import sys
import time
from pathlib import Path

import psutil

from specops.backends.triton_server import TritonServer

server = TritonServer(Path(sys.argv[1]), Path(sys.argv[2])).start()
ep = server.wait_ready(120)
stubs = [p.pid for p in psutil.Process(server.pid).children(recursive=True)]
print(json.dumps({"server": server.pid, "stubs": stubs, "ports": [ep.http_port, ep.grpc_port, ep.metrics_port]}), flush=True)
time.sleep(3600)

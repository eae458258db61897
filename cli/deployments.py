"""`specops schema` and `specops deployments`: the profile JSON schema, prefect.yaml, the work pools' templates."""
from __future__ import annotations

import json
import sys
from pathlib import Path


def add_parser(sub) -> None:
    schema = sub.add_parser("schema", help="print the profile JSON schema")
    schema.add_argument("-o", "--output", type=Path)
    schema.set_defaults(handler=cmd_schema)
    deployments = sub.add_parser("deployments", help="write prefect.yaml from the profiles (or a work pool's "
                                 "base job template)")
    deployments.add_argument("-o", "--output", type=Path)
    deployments.add_argument("--pool-template", metavar="POOL", help="print POOL's base job template instead "
                             "(for `prefect work-pool create/update --base-job-template`)")
    deployments.add_argument("--pool-description", metavar="POOL", help="print POOL's description instead (the "
                             "worker command and the blocks its runs need; for `prefect work-pool update "
                             "--description`)")
    deployments.add_argument("--narrow-forms", action="store_true", help="on the configured Prefect server, narrow "
                             "each specops deployment's form to the profiles its pool runs and check overrides "
                             "against the profile schema (run after `prefect deploy`)")
    deployments.set_defaults(handler=cmd_deployments)


def cmd_schema(args) -> int:
    from specops.profile.schema import Profile

    text = json.dumps(Profile.model_json_schema(), indent=2) + "\n"
    if args.output:
        args.output.write_text(text)
    else:
        sys.stdout.write(text)
    return 0


def pool_template(pool: str) -> dict:
    """Prefect's process-worker template with the pool's environment as the `env` default: the
    worker resolves its `{{ prefect.blocks.secret... }}` when it starts a run. A default, not the
    job configuration itself: the server refuses placeholders there that are not declared variables
    (prefect/server/schemas/actions.py validate_base_job_template)."""
    from prefect.workers.process import ProcessWorker

    from specops.fleet.deployments import pool_env

    template = ProcessWorker.get_default_base_job_template()
    env = template["variables"]["properties"]["env"]
    env["default"] = {**(env.get("default") or {}), **pool_env(pool)}
    return template


def cmd_deployments(args) -> int:
    from specops.fleet.deployments import CPU_POOL, GPU_POOL
    from specops.fleet.prefect_yaml import render

    if args.narrow_forms:
        from prefect_adapters.forms import narrow_forms

        changed = narrow_forms()
        print(f"forms: {len(changed)} deployment(s) offer only their pool's profiles and check overrides when a run "
              "is created")
        return 0
    if args.pool_description:
        if args.pool_description not in (CPU_POOL, GPU_POOL):
            print(f"specops: --pool-description {args.pool_description!r}: the pools are {CPU_POOL}, {GPU_POOL}",
                  file=sys.stderr)
            return 2
        from specops.fleet.pools import pool_description

        text = pool_description(args.pool_description) + "\n"
    elif args.pool_template:
        if args.pool_template not in (CPU_POOL, GPU_POOL):
            print(f"specops: --pool-template {args.pool_template!r}: the pools are {CPU_POOL}, {GPU_POOL}",
                  file=sys.stderr)
            return 2
        text = json.dumps(pool_template(args.pool_template), indent=2) + "\n"
    else:
        text = render()
    if args.output:
        Path(args.output).write_text(text)
    else:
        sys.stdout.write(text)
    return 0

"""Where the upstream reference files are: ../shared/reference beside the checkout (SOURCES.txt
there names each file's repository and commit). Tests read them in place, never copies."""
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
REFERENCE = ROOT.parent / "shared" / "reference"

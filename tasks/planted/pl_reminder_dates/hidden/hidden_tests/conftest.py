# The grader runs pytest from outside the workspace, so the project (this folder's parent) is not on
# sys.path by itself.
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

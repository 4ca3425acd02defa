#!/usr/bin/env bash
# Builds a small demo repository in a temporary directory — one change ported to two
# release branches whose baselines differ — and runs portdiff on it.
# Usage: tools/portdiff/example.sh [PORTDIFF_BINARY] [portdiff options...]
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
portdiff=$(realpath "${1:-$here/../../build/portdiff/portdiff}")
shift || true
demo=$(mktemp -d)
trap 'rm -rf "$demo"' EXIT
cd "$demo"

# Fixed identities and dates make the pinned SHAs the same on every run.
export GIT_AUTHOR_NAME=demo GIT_AUTHOR_EMAIL=demo@example.com
export GIT_COMMITTER_NAME=demo GIT_COMMITTER_EMAIL=demo@example.com
export GIT_AUTHOR_DATE='2024-01-01T00:00:00Z' GIT_COMMITTER_DATE='2024-01-01T00:00:00Z'
git init -q -b main .
git config core.autocrlf false
commit() { git add -A && git commit -q -m "$1"; }

mkdir -p src tests
printf 'import os\n\ndef load():\n    return os.environ\n' > src/loader.py
printf 'VERSION = "1.0"\n' > src/version.py
printf 'def helper():\n    pass\n' > src/legacy.py
printf '__all__ = ["load"]\n' > src/__init__.py
printf 'def test_load():\n    assert True\n\n\nclass TestApi:\n    def test_get(self):\n        assert 1\n' > tests/test_api.py
commit "common base"

git branch release-1
git checkout -q -b release-2
printf 'VERSION = "2.0"\n' > src/version.py          # the baselines differ
printf 'LEGACY = False\n' >> src/legacy.py
commit "release-2 baseline"

# The change, on release-1 ...
git checkout -q release-1
git tag r1-base
printf 'import os\nimport functools\n\n@functools.cache\ndef load():\n    return os.environ\n' > src/loader.py
printf 'VERSION = "1.0"\nLAZY = True\n' > src/version.py
printf 'def helper():\n    return None\n' > src/legacy.py
printf 'lazy: true\n' > config.yaml
printf '__all__ = ["load", "LAZY"]\n' > src/__init__.py
printf 'def test_load():\n    assert True\n\n\nclass TestApi:\n    def test_get(self):\n        assert 1\n\n    async def test_lazy(self):\n        assert await load()\n' > tests/test_api.py
commit "lazy loading"
git tag r1-head

# ... and its port to release-2.
git checkout -q release-2
git tag r2-base
printf 'import os\nimport functools\n\n@functools.cache\ndef load():\n    return os.environ\n' > src/loader.py
printf 'VERSION = "2.0"\nLAZY = True\n' > src/version.py
printf 'def helper():\n    return None \nLEGACY = False\n' > src/legacy.py
printf 'def test_load():\n    assert True\n\n\nclass TestApi:\n    def test_get(self):\n        assert 1\n\n    async def test_lazy(self):\n        assert await load(), "lazy"\n\n    def test_fork(self):\n        pass\n' > tests/test_api.py
printf '__all__ = ["load", "LAZY"]\n' > src/__init__.py
printf 'import sys\nPY2 = sys.version_info[0] == 2\n' > src/compat.py
chmod +x src/loader.py
commit "lazy loading (port)"
git tag r2-head

"$portdiff" --repo "$demo" r1-base..r1-head r2-base..r2-head "$@"

#!/usr/bin/env bash
# Runs Ceph's s3-tests against this store: the recorded selection (selection.txt, pinned to the
# s3-tests commit it names) on a fresh store (bench/serve.ts, in a temporary directory), with one
# credential pair and this package's cleanup (store_plugin.py). Prints passed / failed / errors,
# the server errors the store logged (5xx other than 501), and where the per-test results are.
#
#   packages/s3-server/s3-tests/run.sh [pytest arguments]   the selection (or the tests named)
#   packages/s3-server/s3-tests/run.sh --select             rewrite selection.txt (make_selection.py)
#
# Needs Node 24 with the repository's npm ci done, python3 with venv, git, and the network for
# pip (and for the checkout, unless S3TESTS_DIR names one). Environment:
#   S3TESTS_DIR   a checkout of s3-tests at the pinned commit (default: cloned into the cache)
#   S3TESTS_VENV  its Python environment (default: made in the cache, requirements.txt installed)
#   S3TESTS_OUT   where the results go (default: a new temporary directory)
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
pkg=$(dirname "$here")
commit=$(sed -n 's/^# Ceph.s s3-tests at commit \([0-9a-f]\{40\}\).*/\1/p' "$here/selection.txt")
cache=${XDG_CACHE_HOME:-$HOME/.cache}/media-service/s3-tests
src=${S3TESTS_DIR:-$cache/src-$commit}
venv=${S3TESTS_VENV:-$cache/venv}

say() { echo "s3-tests: $*" >&2; }

if [ ! -d "$src/s3tests" ]; then
  say "cloning ceph/s3-tests at $commit into $src"
  rm -rf "$src.tmp"
  git clone -q https://github.com/ceph/s3-tests "$src.tmp"
  git -C "$src.tmp" checkout -q "$commit"
  mv "$src.tmp" "$src"
elif [ -e "$src/.git" ] && [ "$(git -C "$src" rev-parse HEAD)" != "$commit" ]; then
  say "warning: $src is at $(git -C "$src" rev-parse HEAD), the selection at $commit"
fi

if [ "${1:-}" = "--select" ]; then
  head=$commit
  [ -e "$src/.git" ] && head=$(git -C "$src" rev-parse HEAD)
  (cd "$src" && python3 "$here/make_selection.py" "$head") > "$here/selection.txt"
  say "$(grep -vc '^#' "$here/selection.txt") tests written to $here/selection.txt"
  exit 0
fi

if [ ! -x "$venv/bin/python" ]; then
  say "making the Python environment $venv"
  python3 -m venv "$venv"
  "$venv/bin/pip" install -q -r "$src/requirements.txt"
fi

out=${S3TESTS_OUT:-$(mktemp -d -t s3-tests-XXXXXX)}
mkdir -p "$out"

# The store, on a free port; its first stdout line is its URL and credentials as JSON.
(cd "$pkg" && S3_SERVE_LOG=warn exec node --import tsx bench/serve.ts) >"$out/store.json" 2>"$out/store.log" &
store=$!
trap 'kill "$store" 2>/dev/null; wait "$store" 2>/dev/null || true' EXIT
for _ in $(seq 100); do
  [ -s "$out/store.json" ] && break
  kill -0 "$store" 2>/dev/null || { cat "$out/store.log" >&2; say "the store did not start"; exit 1; }
  sleep 0.2
done
[ -s "$out/store.json" ] || { say "the store did not start within 20 s"; exit 1; }

# s3-tests' configuration: every user it knows (main, alt, tenant, iam) is the store's one pair.
"$venv/bin/python" - "$out/store.json" >"$out/s3tests.conf" <<'PY'
import json, sys, urllib.parse
store = json.load(open(sys.argv[1]))
url = urllib.parse.urlsplit(store["url"])
keys = f"access_key = {store['accessKeyId']}\nsecret_key = {store['secretAccessKey']}\n"
user = "display_name = tester\nuser_id = tester\nemail = tester@example.com\n"
print(f"[DEFAULT]\nhost = {url.hostname}\nport = {url.port}\nis_secure = False\nssl_verify = False\n")
print("[fixtures]\nbucket prefix = s3tests-{random}-\niam name prefix = s3-tests-\niam path prefix = /s3-tests/\n")
print(f"[s3 main]\napi_name = default\n{user}{keys}")
print(f"[s3 alt]\n{user}{keys}")
print(f"[s3 tenant]\n{user}{keys}tenant = tester\n")
print(f"[iam]\n{user}{keys}")
print(f"[iam root]\nuser_id = tester\nemail = tester@example.com\n{keys}")
print(f"[iam alt root]\nuser_id = tester\nemail = tester@example.com\n{keys}")
PY

if [ $# -gt 0 ]; then tests=("$@"); else mapfile -t tests < <(grep -v '^#' "$here/selection.txt"); fi
say "running ${#tests[@]} test(s) against $(sed -n 's/.*"url":"\([^"]*\)".*/\1/p' "$out/store.json"); log in $out/pytest.log"
set +e
(cd "$src" && S3TEST_CONF="$out/s3tests.conf" S3TESTS_RESULTS="$out/results.tsv" PYTHONPATH="$here" \
  "$venv/bin/python" -m pytest -p store_plugin -p no:cacheprovider -q -rN "${tests[@]}") >"$out/pytest.log" 2>&1
set -e
if [ ! -s "$out/results.tsv" ]; then
  tail -20 "$out/pytest.log" >&2
  say "pytest reported no test (its log: $out/pytest.log)"
  exit 1
fi

count() { grep -c "^$1	" "$out/results.tsv" || true; }
server_errors=$(grep -c '"msg":"embedded-s3 \(request failed\|internal error\|unhandled error\)"' "$out/store.log" || true)
echo "passed $(count passed), failed $(count failed), errors $(count error), skipped $(count skipped)" \
  "of $(wc -l <"$out/results.tsv"); server errors (5xx other than 501): $server_errors"
echo "per-test results: $out/results.tsv (outcome, test, first line of the failure); store log: $out/store.log"

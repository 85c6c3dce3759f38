#!/usr/bin/env bash
# The contract test: Schemathesis generates requests from the OpenAPI document the API serves
# (/docs/json) and checks every answer against it, with every check on: no server errors, status
# codes, content types, headers and bodies as documented, valid data accepted and invalid data
# refused, authentication enforced, 405 with Allow for undocumented methods. The document is
# generated from the route schemas that also validate requests, so this proves the two agree.
#
# Installs Schemathesis (pinned) into a virtual environment cached under ~/.cache/media-service, starts
# the stack (its own redis-server and embedded object store, the API with an API key, on free ports,
# in a temporary data dir; test/contract/stack.ts), runs, stops the stack. Exit code: Schemathesis's.
#
#   npm run test:contract                         # the CI run (about 3,100 requests, 5-6 minutes on 2 cores)
#   CONTRACT_MAX_EXAMPLES=300 test/contract/schemathesis.sh   # a longer one
#   CONTRACT_SEED=random test/contract/schemathesis.sh        # a new seed (printed) instead of the fixed one
#   test/contract/schemathesis.sh --include-path-regex batch  # extra arguments go to `st run`
#
# The full run (no extra arguments) fails when fewer than CONTRACT_MIN_REQUESTS (2000) requests were
# sent, so that a run which quietly tests little does not pass for it.
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/../.."
repo="$PWD"
SCHEMATHESIS_VERSION=4.32.5

bash scripts/provision.sh contract

# ---- Schemathesis --------------------------------------------------------------------------------
# A Python without CPython's spurious "AST constructor recursion depth mismatch" SystemError (fixed in
# 3.11.8 and 3.12.2), which Hypothesis can meet when it describes a strategy: the run then ends in a
# runtime error of the tool rather than a finding. pyenv keeps versions that are not on PATH.
fixed='import sys; v = sys.version_info; sys.exit(0 if v >= (3, 12, 2) or (3, 11, 8) <= v < (3, 12) else 1)'
python=""
for candidate in python3 python3.13 python3.12 "${PYENV_ROOT:-$HOME/.pyenv}"/versions/3.1[3-9]*/bin/python3; do
  if "$candidate" -c "$fixed" 2>/dev/null; then
    python="$candidate"
    break
  fi
done
if [ -z "$python" ]; then
  echo "note: no Python >= 3.12.2 or >= 3.11.8 found; using python3, whose ast can fail inside Hypothesis" >&2
  python=python3
fi
pyversion="$("$python" -c 'import sys; print("%d.%d" % sys.version_info[:2])')"
venv="${XDG_CACHE_HOME:-${HOME:-/tmp}/.cache}/media-service/schemathesis-${SCHEMATHESIS_VERSION}-py${pyversion}"
if ! "$venv/bin/st" --version 2>/dev/null | grep -qF "version ${SCHEMATHESIS_VERSION}"; then
  echo "installing schemathesis ${SCHEMATHESIS_VERSION} into $venv (Python ${pyversion})"
  rm -rf "$venv"
  "$python" -m venv "$venv"
  "$venv/bin/pip" install --quiet --disable-pip-version-check "schemathesis==${SCHEMATHESIS_VERSION}"
fi
"$venv/bin/st" --version

# ---- The stack -----------------------------------------------------------------------------------
work="$(mktemp -d "${TMPDIR:-/tmp}/media-service-contract.XXXXXX")"
key="contract-$(od -An -N12 -tx1 /dev/urandom | tr -d ' \n')"
stack_pid=""
stop_stack() {
  if [[ -n "$stack_pid" ]] && kill -0 "$stack_pid" 2>/dev/null; then
    kill -TERM "$stack_pid" 2>/dev/null || true
    for _ in $(seq 1 100); do kill -0 "$stack_pid" 2>/dev/null || break; sleep 0.1; done
    kill -KILL "$stack_pid" 2>/dev/null || true
  fi
  stack_pid=""
}
cleanup() {
  stop_stack
  rm -rf "$work"
}
trap cleanup EXIT

# An AI provider is configured (never reached: no job is processed), so analyze's `provider` has a
# name to accept.
env -u REDIS_URL -u S3_ENDPOINT -u CONFIG_FILE \
  DATA_DIR="$work/data" PORT=0 EMBEDDED_S3_PORT=0 API_KEYS="$key" \
  LOG_LEVEL=warn LOG_FORMAT=json \
  AI_BASE_URL=http://127.0.0.1:9/v1 AI_MODEL=contract-model AI_API_KEY=contract \
  node --import tsx test/contract/stack.ts >"$work/stack.out" 2>"$work/stack.log" &
stack_pid=$!
base=""
for _ in $(seq 1 300); do
  base="$(sed -n 's/^listening //p' "$work/stack.out")"
  [[ -n "$base" ]] && break
  kill -0 "$stack_pid" 2>/dev/null || break
  sleep 0.1
done
if [[ -z "$base" ]]; then
  echo "the stack did not start:" >&2
  tail -n 30 "$work/stack.log" >&2
  exit 1
fi
echo "stack: $base (log: $work/stack.log while it runs)"

# ---- The run -------------------------------------------------------------------------------------
seed="${CONTRACT_SEED:-20261124}"
[[ "$seed" == random ]] && seed="$(od -An -N4 -tu4 /dev/urandom | tr -d ' ')"
echo "seed: $seed"
started=$SECONDS
set +e
(
  cd "$work" &&
    "$venv/bin/st" --config-file "$repo/test/contract/schemathesis.toml" run "$base/docs/json" \
      --url "$base" \
      --header "X-API-Key: $key" \
      --checks all \
      --phases examples,coverage,fuzzing,stateful \
      --max-examples "${CONTRACT_MAX_EXAMPLES:-20}" \
      --seed "$seed" \
      --workers 2 \
      --request-timeout 10 \
      --generation-database none \
      --suppress-health-check all \
      --no-color \
      --report ndjson --report-dir "$work/report" \
      "$@"
)
rc=$?
set -e
echo "schemathesis: exit $rc in $((SECONDS - started)) s"
# How many requests were sent, from the NDJSON report (one ScenarioFinished event per scenario, each
# with the interactions it recorded). A run that quietly tests little (a filter that matches nothing,
# a document that lost its operations) must not pass for the full one.
requests="$(python3 - "$work"/report/ndjson-*.ndjson <<'PY'
import json, sys
total = 0
for path in sys.argv[1:]:
    with open(path, encoding="utf-8") as report:
        for line in report:
            event = json.loads(line).get("ScenarioFinished")
            if event:
                total += len((event.get("recorder") or {}).get("interactions") or {})
print(total)
PY
)"
echo "requests sent: $requests"
min_requests="${CONTRACT_MIN_REQUESTS:-2000}"
if [[ $rc -eq 0 && $# -eq 0 && "$requests" -lt "$min_requests" ]]; then
  echo "only $requests requests were sent (at least $min_requests expected): the document or the run lost operations" >&2
  rc=1
fi
if [[ $rc -ne 0 ]]; then
  echo "the stack's warnings and errors (last 40 lines):" >&2
  tail -n 40 "$work/stack.log" >&2 || true
fi
stop_stack
exit $rc

#!/usr/bin/env bash
# compat-tests/run-all.sh [--quick]
# Runs every test in src/*.c (filtered by TOUCAN_COMPAT_FILTER) through
# run.sh; this is what `make test` calls. Ends with
#   compat: N passed, N failed
# and a non-zero exit status if anything failed. See run.sh for the
# environment variables.
set -u
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
mapfile -t names < <(compat_all_names)
if [[ ${#names[@]} -eq 0 ]]; then
    echo "run-all.sh: no test matches TOUCAN_COMPAT_FILTER='${TOUCAN_COMPAT_FILTER:-}'" >&2
    echo "compat: 0 passed, 0 failed"
    exit 1
fi
exec "$COMPAT_DIR/run.sh" "$@" "${names[@]}"

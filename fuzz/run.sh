#!/usr/bin/env bash
# Builds the cargo-fuzz targets and runs each in turn (one libFuzzer process at a time: the
# machines this runs on have two cores), then prints how many inputs each target executed.
#
#   fuzz/run.sh [TARGET...]          every target (`cargo fuzz list`) when none is named
#
# Environment:
#   FUZZ_SECONDS   time per target, in seconds (default 600). A long on-demand campaign:
#                  FUZZ_SECONDS=3600 fuzz/run.sh; a CI smoke run: FUZZ_SECONDS=20 FUZZ_RECORD=0.
#   FUZZ_RUNS      also stop a target after this many inputs (default: no cap).
#   FUZZ_RECORD    1 (default): append each run to fuzz/runs.tsv and rewrite the table in
#                  docs/fuzzing.md from it; 0: record nothing (CI, experiments).
#   FUZZ_SANITIZER cargo-fuzz sanitizer (default none: the fuzzed crates have no unsafe code,
#                  and without AddressSanitizer a target runs two to three times faster).
#   FUZZ_TIMEOUT   seconds one input may take before libFuzzer reports a hang (default 10).
#   FUZZ_ARGS      extra libFuzzer arguments, e.g. "-max_len=65536".
#
# Corpora grow in fuzz/corpus/TARGET (git-ignored; the committed seeds are in
# fuzz/seeds/TARGET and are read, never written). Crashing inputs land in
# fuzz/artifacts/TARGET. The exit status is 1 when any target found something.
# The stable toolchain is enough: RUSTC_BOOTSTRAP=1 lets it accept the -Z flags cargo-fuzz
# passes.
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
export RUSTC_BOOTSTRAP=1

seconds=${FUZZ_SECONDS:-600}
record=${FUZZ_RECORD:-1}
sanitizer=${FUZZ_SANITIZER:-none}
timeout=${FUZZ_TIMEOUT:-10}
read -r -a extra <<<"${FUZZ_ARGS:-}"
if [[ -n ${FUZZ_RUNS:-} ]]; then
    extra+=("-runs=$FUZZ_RUNS")
fi

if ! cargo fuzz --version >/dev/null 2>&1; then
    echo "cargo-fuzz is missing: cargo install cargo-fuzz --locked" >&2
    exit 2
fi

# Debug assertions on: integer overflow is a finding, not a silent wrap.
build_flags=(-s "$sanitizer" -a)
if [[ $# -gt 0 ]]; then
    targets=("$@")
else
    mapfile -t targets < <(cargo fuzz list)
fi
# Built once, then the binaries run directly: `cargo fuzz run` would rebuild before every
# target, and in a work tree others are editing, a campaign would fuzz a moving (or broken)
# tree.
# (`cargo fuzz build` takes one target or builds them all.)
if [[ ${#targets[@]} -eq 1 ]]; then
    cargo fuzz build "${build_flags[@]}" "${targets[0]}"
else
    cargo fuzz build "${build_flags[@]}"
fi
bin_dir="fuzz/target/$(rustc -vV | sed -n 's/^host: //p')/release"

log_dir=$(mktemp -d)
pid=
trap 'rm -rf "$log_dir"' EXIT
# An interrupted campaign must not leave its libFuzzer process running.
trap '[[ -n $pid ]] && kill "$pid" 2>/dev/null; exit 130' INT TERM
summary=()
failed=0
for t in "${targets[@]}"; do
    mkdir -p "fuzz/corpus/$t" "fuzz/artifacts/$t"
    seeds=()
    if [[ -d fuzz/seeds/$t ]]; then
        seeds=("fuzz/seeds/$t")
    fi
    log="$log_dir/$t.log"
    echo "== $t: ${seconds}s"
    start=$(date +%s)
    status=0
    : >"$log"
    # Artifacts newer than this marker are this run's findings (in -fork mode they are written
    # by child processes whose output the parent does not repeat).
    marker="$log_dir/$t.start"
    : >"$marker"
    # libFuzzer's hang report allocates inside a signal handler, and without a sanitizer's
    # allocator it can deadlock there for good (seen on r1_parse): a process still alive well
    # past its time is killed (exit 137), and the run recorded as a hang. The first corpus
    # directory is where libFuzzer writes new inputs.
    timeout -s KILL $((seconds + 2 * timeout + 120)) \
        "$bin_dir/$t" -artifact_prefix="fuzz/artifacts/$t/" \
        -max_total_time="$seconds" -timeout="$timeout" -print_final_stats=1 \
        "${extra[@]}" "fuzz/corpus/$t" "${seeds[@]}" >"$log" 2>&1 &
    pid=$!
    tail -n +1 -f --pid="$pid" "$log" |
        grep --line-buffered -E '^(#[0-9]+[[:space:]]+(INITED|DONE|pulse)|==[0-9]+== ERROR|.*panicked at|Test unit written|ALARM|stat::)' || true
    wait "$pid" || status=$?
    pid=
    elapsed=$(($(date +%s) - start))
    # Time spent stuck after the deadline is not fuzzing time.
    if [[ $elapsed -gt $seconds ]]; then
        elapsed=$seconds
    fi
    # Without final stats (a process killed), the last `#N` status line is the best count.
    inputs=$(sed -n 's/^stat::number_of_executed_units: *\([0-9]*\).*/\1/p' "$log" | tail -1)
    if [[ -z $inputs ]]; then
        inputs=$(sed -n 's/^#\([0-9][0-9]*\)[:[:space:]].*/\1/p' "$log" | tail -1)
    fi
    inputs=${inputs:-0}
    mapfile -t new_artifacts < <(find "fuzz/artifacts/$t" -type f -newer "$marker" ! -name 'slow-unit-*' | sort)
    if [[ ${#new_artifacts[@]} -gt 0 ]]; then
        result="finding:${#new_artifacts[@]}:${new_artifacts[0]}"
        failed=1
    elif [[ $status -eq 137 ]]; then
        result="finding:hang-input-lost"
        failed=1
    elif [[ $status -ne 0 ]]; then
        result="error:exit-$status"
        failed=1
    else
        result=ok
    fi
    summary+=("$(printf '%-18s %12s inputs %6ss  %s' "$t" "$inputs" "$elapsed" "$result")")
    if [[ $record == 1 ]]; then
        printf '%s\t%s\t%s\t%s\t%s\t%s\n' "$(date -u +%Y-%m-%dT%H:%MZ)" "$t" "$inputs" \
            "$elapsed" "$sanitizer" "$result" >>fuzz/runs.tsv
    fi
done

if [[ $record == 1 && -f fuzz/runs.tsv ]]; then
    # The table between the markers in docs/fuzzing.md is generated from fuzz/runs.tsv.
    table=$(awk -F'\t' '
        /^#/ || NF < 6 { next }
        {
            if (!($2 in n)) order[++k] = $2
            n[$2] += $3; s[$2] += $4; runs[$2]++; last[$2] = substr($1, 1, 10)
            if ($6 != "ok") f[$2]++
        }
        END {
            print "| target | cumulative inputs | cumulative time | runs | last run | runs ended by a finding |"
            print "|---|---:|---:|---:|---|---:|"
            for (i = 1; i <= k; i++) {
                t = order[i]
                printf "| %s | %d | %dh %02dm | %d | %s | %d |\n", t, n[t], s[t] / 3600, (s[t] % 3600) / 60, runs[t], last[t], f[t]
            }
        }' fuzz/runs.tsv)
    awk -v table="$table" '
        /<!-- fuzz-table:begin -->/ { print; print table; skip = 1; next }
        /<!-- fuzz-table:end -->/ { skip = 0 }
        !skip { print }' docs/fuzzing.md >"$log_dir/fuzzing.md"
    cp "$log_dir/fuzzing.md" docs/fuzzing.md
fi

echo
echo "== summary (${seconds}s per target, sanitizer $sanitizer)"
printf '%s\n' "${summary[@]}"
exit "$failed"

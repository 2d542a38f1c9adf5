#!/usr/bin/env bash
# scripts/mutants.sh — the mutation check: applies each mutant of a fixed list (a one-place
# change to the ledger, ordering, outbox, relay, publisher acks, groups and fencing, effects,
# serve's answers, replay or quarantine), rebuilds what its test needs and runs the one
# deterministic test named for it. A mutant whose test still passes "survived": a behaviour
# nothing asserts. Every pattern is checked to occur exactly once before anything is built.
#
# Usage: scripts/mutants.sh [--check] [--in-place] [--sample N] [--seed S] [NAME...]
#   (no option)  a scratch copy of the tree (MUTANTS_DIR, default /tmp/evident-mutants-$USER,
#                its build kept for incremental builds), with the work tree's uncommitted changes
#   --check      only checks that every pattern occurs exactly once (no build); exit 1 if not
#   --in-place   mutates this tree and builds in ./build (after scripts/test.sh built and
#                tested it): each file is restored after its mutant, and on any exit; the next
#                build recompiles the restored files
#   --sample N   N mutants drawn with seed S (--seed, default the current time; printed, so a
#                run is replayed with the same --seed)
#   NAME...      these mutants only
#   JOBS         build parallelism (default: the number of cores)
# Exit status: 0 when every mutant run was killed; 1 when one survived, does not apply (its
# pattern no longer occurs exactly once: update the list with the code) or does not build; 2
# when a mutant's test fails on the unmutated tree.
set -uo pipefail
cd "$(dirname "$0")/.." || exit 2
root=$PWD
jobs=${JOBS:-$(nproc)}

names=() files=() olds=() news=() targets=() filters=()
# mutant NAME FILE OLD NEW TARGET FILTER: replace the text OLD (which must occur exactly once in
# FILE) with NEW; the gtest binary TARGET run with --gtest_filter=FILTER must then fail.
mutant() {
  names+=("$1") files+=("$2") olds+=("$3") news+=("$4") targets+=("$5") filters+=("$6")
}
# shellcheck source=scripts/mutants.list
. "$root/scripts/mutants.list"

check_only=0 in_place=0 sample=0 seed=$(date +%s) selected=()
while [ $# -gt 0 ]; do
  case $1 in
    --check) check_only=1 ;;
    --in-place) in_place=1 ;;
    --sample) sample=$2; shift ;;
    --seed) seed=$2; shift ;;
    -*) echo "unknown option $1" >&2; exit 2 ;;
    *) selected+=("$1") ;;
  esac
  shift
done

# Counts OLD in FILE (python: the texts may span lines).
occurrences() {
  python3 -c 'import sys; print(open(sys.argv[1]).read().count(sys.argv[2]))' "$1" "$2"
}
# Replaces OLD with NEW in FILE, exactly once.
apply() {
  python3 - "$1" "$2" "$3" <<'PY'
import sys
path, old, new = sys.argv[1:]
text = open(path).read()
count = text.count(old)
if count != 1:
    sys.exit(f"pattern occurs {count} times in {path}, not once")
open(path, "w").write(text.replace(old, new))
PY
}

unmatched=0
for i in "${!names[@]}"; do
  n=$(occurrences "$root/${files[$i]}" "${olds[$i]}" 2>/dev/null || echo "no file")
  if [ "$n" != 1 ]; then
    printf '%-44s pattern occurs %s times in %s, not once\n' "${names[$i]}" "$n" "${files[$i]}"
    unmatched=$((unmatched + 1))
  fi
done
for name in "${selected[@]}"; do
  [[ " ${names[*]} " == *" $name "* ]] || { echo "no mutant named $name" >&2; exit 2; }
done
echo "mutants: ${#names[@]} listed, $unmatched whose pattern does not occur exactly once"
((check_only)) && exit $((unmatched > 0))
((unmatched == 0)) || exit 1

# The mutants to run: those named, a sample, or all.
run=()
if [ ${#selected[@]} -gt 0 ]; then
  for i in "${!names[@]}"; do
    [[ " ${selected[*]} " == *" ${names[$i]} "* ]] && run+=("$i")
  done
elif ((sample > 0)); then
  echo "sample of $sample, seed $seed (again: scripts/mutants.sh --sample $sample --seed $seed)"
  mapfile -t run < <(python3 -c 'import random, sys
n, k, seed = map(int, sys.argv[1:])
print("\n".join(map(str, sorted(random.Random(seed).sample(range(n), min(k, n))))))' \
    "${#names[@]}" "$sample" "$seed")
else
  run=("${!names[@]}")
fi

saved=$(mktemp -d) pg_dir=""
# On any exit: every file a mutant changed is put back (a copy was saved first), and the
# PostgreSQL server started here is stopped.
cleanup() {
  for i in "${run[@]}"; do
    [ -f "$saved/$i" ] && cat "$saved/$i" >"$tree/${files[$i]}" && rm -f "$saved/$i"
  done
  rm -rf "$saved"
  [ -z "$pg_dir" ] || bash "$root/scripts/postgres.sh" stop "$pg_dir" >/dev/null 2>&1 || true
}
trap cleanup EXIT
trap 'exit 130' INT TERM
if ((in_place)); then
  tree=$root build=$root/build logs=$(mktemp -d)
  [ -f "$build/build.ninja" ] || { echo "no build in $build: run scripts/test.sh first" >&2; exit 2; }
else
  scratch=${MUTANTS_DIR:-/tmp/evident-mutants-${USER:-$(id -un)}}
  tree=$scratch/tree build=$scratch/build logs=$scratch/logs
  mkdir -p "$tree" "$logs"
  # The tracked files, copied over the previous run's copy: a file whose content changed is
  # written anew and so gets the current time, which the kept build then rebuilds. Unchanged
  # files keep their times: builds stay incremental.
  rm -rf "$tree.new" && mkdir -p "$tree.new"
  git ls-files -z | xargs -0 tar -cf - | tar -xf - -C "$tree.new"
  while IFS= read -r -d '' file; do
    if ! cmp -s "$tree.new/$file" "$tree/$file"; then
      mkdir -p "$(dirname "$tree/$file")"
      cat "$tree.new/$file" >"$tree/$file.copy" && mv "$tree/$file.copy" "$tree/$file"
      chmod --reference="$tree.new/$file" "$tree/$file"
    fi
  done < <(git ls-files -z)
  rm -rf "$tree.new"
  cmake -S "$tree" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DEVIDENT_ASSERTIONS=ON \
    -DEVIDENT_BENCH=OFF >"$logs/configure.log" 2>&1 || { cat "$logs/configure.log"; exit 2; }
fi

echo "logs: $logs"

# A test of the PostgreSQL store needs the server the test suite's fixture otherwise starts.
for i in "${run[@]}"; do
  if [[ ${filters[$i]} == *postgresql* && -z ${EVIDENT_TEST_POSTGRES_URL_FILE:-} ]]; then
    pg_dir=$(mktemp -d)
    bash "$root/scripts/postgres.sh" start "$pg_dir" >/dev/null || exit 2
    export EVIDENT_TEST_POSTGRES_URL_FILE=$pg_dir/url
    break
  fi
done

# Builds TARGET; its log in LOG.
build_target() { cmake --build "$build" -j "$jobs" --target "$1" >"$2" 2>&1; }
# Runs mutant I's test (at most 15 minutes); its log in LOG. Exit status: the test's.
run_test() {
  local binary
  binary=$(find "$build" -name "${targets[$1]}" -type f -perm -u+x -not -path '*/CMakeFiles/*' |
    head -1)
  [ -n "$binary" ] || { echo "no binary ${targets[$1]} under $build" >"$2"; return 99; }
  # Through an inner shell: a test that aborts (an assertion, as a mutant
  # may trip) is an exit status in its log, not a shell's "Aborted" line here.
  bash -c 'cd "$1" && timeout 900 "$2" --gtest_filter="$3" --gtest_brief=1; exit $?' _ \
    "$build" "$binary" "${filters[$1]}" >"$2" 2>&1
}

# The unmutated tree passes every test about to be asked to fail (each target once).
declare -A baseline=()
for i in "${run[@]}"; do
  key="${targets[$i]} ${filters[$i]}"
  [ -n "${baseline[$key]:-}" ] && continue
  baseline[$key]=1
  if ! build_target "${targets[$i]}" "$logs/baseline.build.log"; then
    tail -30 "$logs/baseline.build.log"
    exit 2
  fi
  if ! run_test "$i" "$logs/baseline.${names[$i]}.log"; then
    echo "the unmutated tree fails ${targets[$i]} --gtest_filter='${filters[$i]}':"
    tail -30 "$logs/baseline.${names[$i]}.log"
    exit 2
  fi
done

killed=0 survived=0 broken=0
for i in "${run[@]}"; do
  name=${names[$i]} file=$tree/${files[$i]}
  cp "$file" "$saved/$i"
  if ! error=$(apply "$file" "${olds[$i]}" "${news[$i]}" 2>&1); then
    printf '%-44s NOT APPLIED (%s)\n' "$name" "$error"
    broken=$((broken + 1))
  elif ! build_target "${targets[$i]}" "$logs/$name.build.log"; then
    printf '%-44s DOES NOT BUILD (log: %s)\n' "$name" "$logs/$name.build.log"
    broken=$((broken + 1))
  elif run_test "$i" "$logs/$name.test.log"; then
    printf '%-44s SURVIVED %s --gtest_filter=%s\n' "$name" "${targets[$i]}" "${filters[$i]}"
    survived=$((survived + 1))
  else
    printf '%-44s killed by %s %s\n' "$name" "${targets[$i]}" "${filters[$i]}"
    killed=$((killed + 1))
  fi
  cat "$saved/$i" >"$file" && rm -f "$saved/$i"
done
echo "mutants run: $killed killed, $survived survived, $broken not applied or not built"
((survived == 0 && broken == 0))

#!/usr/bin/env bash
# scripts/mutants.sh — the mutation check of the decision code: applies each mutant of a fixed
# list (a one-place change to the pipeline, the SQLite store or the consume loop) to a scratch
# copy of the tree, rebuilds it incrementally and runs the tests that guard that code, fastest
# first, until one fails. A mutant no test notices "survived": a behaviour nothing asserts.
#
# Usage: scripts/mutants.sh [NAME...]   (default: every mutant)
#   MUTANTS_DIR  scratch directory, kept between runs for incremental builds
#                (default: /tmp/evident-mutants-$USER)
#   JOBS         build parallelism (default 2)
# Exit status: 0 when every mutant was killed; 1 when one survived, did not apply (its pattern no
# longer matches exactly once: update the list) or did not build; 2 when the unmutated tree
# fails its own tests. Runs on demand (docs/DEVELOPING.md), not in every CI run: about a minute
# per mutant on 2 cores.
set -uo pipefail
cd "$(dirname "$0")/.."
root=$PWD
scratch=${MUTANTS_DIR:-/tmp/evident-mutants-${USER:-$(id -un)}}
jobs=${JOBS:-2}
tree=$scratch/tree
build=$scratch/build
logs=$scratch/logs

# The tests that guard the decision code, cheapest first (a gtest binary each, under $build).
tests=(src/envelope/envelope_test src/consumer/consumer_test src/store/sqlite/sqlite_store_test
  src/store/sqlite/store_conformance_test tests/consume_test tests/hardening_test
  tests/crash_test)
targets=(evident envelope_test consumer_test sqlite_store_test store_conformance_test consume_test
  hardening_test crash_test)

names=() files=() olds=() news=()
# mutant NAME FILE OLD NEW: replace the text OLD (which must occur exactly once) with NEW.
mutant() { names+=("$1"); files+=("$2"); olds+=("$3"); news+=("$4"); }

P=src/consumer/pipeline.cc
S=src/store/sqlite/sqlite_store.cc
R=src/consumer/consume_loop.cc
mutant duplicate-reapplies $P \
  'if (status.code() == Code::kAlreadyExists) return false;' \
  'if (status.code() == Code::kAlreadyExists) return true;'
mutant duplicate-of-current-version-is-conflict $P \
  'if (version <= projection.version) {' \
  'if (version < projection.version) {'
mutant duplicate-count-not-summed $S \
  'SET duplicates=duplicates+1,' \
  'SET duplicates=1,'
mutant stale-off-by-one $P \
  'if (version < projection.version) {' \
  'if (version < projection.version - 1) {'
mutant conflict-applies $P \
  'if (version == projection.version) {' \
  'if (version == projection.version && false) {'
mutant conflict-with-deferred-ignored $P \
  '      if (occupied) {' \
  '      if (false) {'
mutant gap-of-one-applies $P \
  'if (version > projection.version + 1) {' \
  'if (version > projection.version + 2) {'
mutant deferred-expected-version $P \
  $'projection.version + 1,\n                             std::string(event.raw),' \
  $'projection.version + 2,\n                             std::string(event.raw),'
mutant drain-only-one $P \
  'while (projection.owner_version_seen > projection.version) {' \
  'if (projection.owner_version_seen > projection.version) {'
mutant boundary-ignored $P \
  'if (!SourceInsideBoundary(event.source, contract.boundary)) {' \
  'if (false) {'
mutant accepted-version-any $P \
  'const auto version_it = type_it->second.find(schema_version);' \
  'const auto version_it = type_it->second.begin();'
mutant payload-not-validated $P \
  'if (!has_payload || !payload_schema->IsValid(payload)) {' \
  'if (!has_payload) {'
mutant unordered-advances-by-two $P \
  'projection.version += 1;' \
  'projection.version += 2;'
mutant evidence-id-is-source $P \
  'record.event_id.assign(event.id);' \
  'record.event_id.assign(event.source);'
mutant evidence-version-is-owner-seen $P \
  'record.subject_version = projection.version;' \
  'record.subject_version = projection.owner_version_seen;'
mutant evidence-version-not-stored $S \
  'r.subject_version ? w.Int(*r.subject_version) : w.Null();' \
  'w.Null();'
mutant kept-without-version $P \
  'kept.subject_version = subject_version;' \
  'kept.subject_version = std::nullopt;'
mutant checkpoint-before-line-decided $R \
  'decided_thru = item->read_thru;' \
  $'decided_thru = item->read_thru;\n    --decided_thru.lines;'
mutant checkpoint-outside-transaction $R \
  $'    EVIDENT_RETURN_IF_ERROR(store.SetCheckpoint(input_name, decided_thru));\n    FaultPoint("after-checkpoint");\n    EVIDENT_RETURN_IF_ERROR(store.Commit());' \
  $'    EVIDENT_RETURN_IF_ERROR(store.Commit());\n    FaultPoint("after-checkpoint");\n    EVIDENT_RETURN_IF_ERROR(store.SetCheckpoint(input_name, decided_thru));'
mutant resume-on-another-input $R \
  'if (is.bytes != was.bytes || is.prefix_hash != was.prefix_hash) {' \
  'if (is.bytes != was.bytes) {'
mutant expected-version-stored-at-deferral src/cli/cmd_evidence.cc \
  'g.expected = ExpectedVersion(*projection);' \
  '(void)projection;'
mutant boundary-dot-segments src/envelope/envelope.cc \
  '  if (HasDotSegment(source)) return false;' \
  ''


# Replaces OLD with NEW in FILE, exactly once; fails when OLD does not occur exactly once.
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

build_tree() { cmake --build "$build" -j "$jobs" --target "${targets[@]}" >"$1" 2>&1; }

# Runs the tests in order until one fails; prints the failing test's name, or nothing.
first_failing_test() {
  for t in "${tests[@]}"; do
    if ! "$build/$t" --gtest_brief=1 >"$logs/$1.$(basename "$t").log" 2>&1; then
      basename "$t"
      return
    fi
  done
}

mkdir -p "$scratch" "$logs"
# The tracked files, copied over the previous run's copy: a file whose content changed is written
# anew and so gets the current time, which the kept scratch build then rebuilds (restoring the
# work tree's times instead could leave it older than an object built from an earlier content,
# and ninja would link the stale object). Unchanged files keep their times: builds stay
# incremental.
rm -rf "$tree.new"
mkdir -p "$tree" "$tree.new"
git ls-files -z | xargs -0 tar -cf - | tar -xf - -C "$tree.new"
while IFS= read -r -d '' file; do
  if ! cmp -s "$tree.new/$file" "$tree/$file"; then
    mkdir -p "$(dirname "$tree/$file")"
    cat "$tree.new/$file" >"$tree/$file.copy" && mv "$tree/$file.copy" "$tree/$file"
    chmod --reference="$tree.new/$file" "$tree/$file"
  fi
done < <(git ls-files -z)
rm -rf "$tree.new"
# Files with uncommitted changes are copied as they are in the work tree (tar did that above).
cmake -S "$tree" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DEVIDENT_ASSERTIONS=ON \
  -DEVIDENT_BENCH=OFF >"$logs/configure.log" 2>&1 || { cat "$logs/configure.log"; exit 2; }

echo "baseline: building and testing the unmutated tree"
build_tree "$logs/baseline.build.log" || { tail -30 "$logs/baseline.build.log"; exit 2; }
failed=$(first_failing_test baseline)
if [ -n "$failed" ]; then
  echo "the unmutated tree fails $failed (log: $logs/baseline.$failed.log)"
  exit 2
fi

selected=("$@")
killed=0 survived=0 broken=0
for i in "${!names[@]}"; do
  name=${names[$i]} file=${files[$i]}
  if [ ${#selected[@]} -gt 0 ] && [[ ! " ${selected[*]} " == *" $name "* ]]; then continue; fi
  cp "$root/$file" "$tree/$file"
  if ! error=$(apply "$tree/$file" "${olds[$i]}" "${news[$i]}" 2>&1); then
    printf '%-44s NOT APPLIED (%s)\n' "$name" "$error"
    broken=$((broken + 1))
    continue
  fi
  if ! build_tree "$logs/$name.build.log"; then
    printf '%-44s DOES NOT BUILD (log: %s)\n' "$name" "$logs/$name.build.log"
    broken=$((broken + 1))
  else
    failed=$(first_failing_test "$name")
    if [ -n "$failed" ]; then
      printf '%-44s killed by %s\n' "$name" "$failed"
      killed=$((killed + 1))
    else
      printf '%-44s SURVIVED\n' "$name"
      survived=$((survived + 1))
    fi
  fi
  cp "$root/$file" "$tree/$file"
done
# Leave the scratch build matching the unmutated tree for the next run.
build_tree "$logs/restore.build.log" || true

echo "mutants: $killed killed, $survived survived, $broken not applied or not built"
[ "$survived" -eq 0 ] && [ "$broken" -eq 0 ]

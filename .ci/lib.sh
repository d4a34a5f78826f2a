# Shared by .ci/run and .ci/smoke (sourced).
#
# remove_tree DIR: removes a scratch copy of the checkout. A process still running in it (a test's
# child that outlived its suite) is named on stderr with its command line, then killed, so the leak
# shows in the CI log; and a removal racing such a process (it created a file after rm read the
# directory: "Directory not empty") is tried again. A scratch directory that cannot be removed is
# reported, never turned into the run's result: the exit code stays the suite's.
remove_tree() {
  local dir="$1" p pid cwd found=""
  [ -n "$dir" ] && [ -d "$dir" ] || return 0
  for p in /proc/[0-9]*; do
    pid="${p#/proc/}"
    [ "$pid" = "$$" ] && continue
    cwd=$(readlink "$p/cwd" 2>/dev/null) || continue
    case "$cwd" in
      "$dir" | "$dir"/*)
        echo "CI: process $pid still runs in $cwd: $(tr '\0' ' ' <"$p/cmdline" 2>/dev/null | cut -c1-300)" >&2
        found="$found $pid"
        ;;
    esac
  done
  if [ -n "$found" ]; then
    # shellcheck disable=SC2086
    kill -KILL $found 2>/dev/null || true
    sleep 1
  fi
  for _ in 1 2 3; do
    rm -rf "$dir" 2>/dev/null && return 0
    sleep 1
  done
  rm -rf "$dir" || echo "CI: could not remove $dir (left in place)" >&2
  return 0
}

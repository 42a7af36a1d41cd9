#!/bin/bash
# A fake terminal agent for tests of MEOW agents in tmux. It reads each injected prompt (the
# lines that arrive together, until 0.3 s of silence), logs it to $FAKE_LOG, and follows the
# prompt's own instructions:
#   FAKE: ARGS         run `$PW meow done ARGS`
#   FAKE-RETRY: ARGS   if that was refused, run `$PW meow done ARGS` (an agent fixing its answer)
#   FAKE-SLEEP: SECS   wait first
#   FAKE-HANG          never answer
#   FAKE-EXIT          quit without answering (the session ends)
#   FAKE-ONLY-FOR: A   FAKE-HANG and FAKE-EXIT hold for agent A only ($MEOW_AGENT): another
#                      agent given the same prompt (a recovery's retry) answers it
#   FAKE-PRIME         log `$PW meow prime --format json` before answering, and after a
#                      refused answer the plain `meow prime` and `--format stop-hook` (what a
#                      Stop hook would be told)
# Started with `--session-id ID` or `--resume ID` (the adapter's `{{session_id}}`), it logs
# `sid ID` or `resumed ID`.
echo "fake agent ready in $(pwd)"
echo started >> "$FAKE_LOG"
case "$1" in
  --session-id) echo "sid $2" >> "$FAKE_LOG" ;;
  --resume) echo "resumed $2" >> "$FAKE_LOG" ;;
esac
while IFS= read -r line; do
  prompt="$line"
  while IFS= read -r -t 0.3 more; do prompt="$prompt
$more"; done
  printf '%s\n---\n' "$prompt" >> "$FAKE_LOG"
  only=$(sed -n 's/.*FAKE-ONLY-FOR: *\([^ ]*\).*/\1/p' <<<"$prompt" | head -1)
  if [ -z "$only" ] || [ "$only" = "$MEOW_AGENT" ]; then
    grep -q 'FAKE-HANG' <<<"$prompt" && continue
    grep -q 'FAKE-EXIT' <<<"$prompt" && exit 0
  fi
  secs=$(sed -n 's/.*FAKE-SLEEP: *\([0-9.]*\).*/\1/p' <<<"$prompt" | head -1)
  [ -n "$secs" ] && sleep "$secs"
  args=$(sed -n 's/.*FAKE: *\(.*\)$/\1/p' <<<"$prompt" | head -1)
  retry=$(sed -n 's/.*FAKE-RETRY: *\(.*\)$/\1/p' <<<"$prompt" | head -1)
  prime=$(grep -c 'FAKE-PRIME' <<<"$prompt")
  [ "$prime" != 0 ] && echo "prime: $("$PW" meow prime --format json)" >> "$FAKE_LOG"
  if ! eval "\"\$PW\" meow done $args" 2>>"$FAKE_LOG"; then
    echo "refused" >> "$FAKE_LOG"
    [ "$prime" != 0 ] && printf 'prime-refused: %s\n---\n' "$("$PW" meow prime)" >> "$FAKE_LOG"
    [ "$prime" != 0 ] && echo "prime-hook: $("$PW" meow prime --format stop-hook)" >> "$FAKE_LOG"
    [ -n "$retry" ] && eval "\"\$PW\" meow done $retry" 2>>"$FAKE_LOG"
  fi
done

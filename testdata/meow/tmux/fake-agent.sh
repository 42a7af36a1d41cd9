#!/bin/bash
# A fake terminal agent for tests of MEOW agents in tmux. It reads each injected prompt (the
# lines that arrive together, until 0.3 s of silence), logs it to $FAKE_LOG, and follows the
# prompt's own instructions:
#   FAKE: ARGS         run `$PW meow done ARGS`
#   FAKE-RETRY: ARGS   if that was refused, run `$PW meow done ARGS` (an agent fixing its answer)
#   FAKE-SLEEP: SECS   wait first
#   FAKE-HANG          never answer
#   FAKE-EXIT          quit without answering (the session ends)
echo "fake agent ready in $(pwd)"
echo started >> "$FAKE_LOG"
while IFS= read -r line; do
  prompt="$line"
  while IFS= read -r -t 0.3 more; do prompt="$prompt
$more"; done
  printf '%s\n---\n' "$prompt" >> "$FAKE_LOG"
  grep -q 'FAKE-HANG' <<<"$prompt" && continue
  grep -q 'FAKE-EXIT' <<<"$prompt" && exit 0
  secs=$(sed -n 's/.*FAKE-SLEEP: *\([0-9.]*\).*/\1/p' <<<"$prompt" | head -1)
  [ -n "$secs" ] && sleep "$secs"
  args=$(sed -n 's/.*FAKE: *\(.*\)$/\1/p' <<<"$prompt" | head -1)
  retry=$(sed -n 's/.*FAKE-RETRY: *\(.*\)$/\1/p' <<<"$prompt" | head -1)
  if ! eval "\"\$PW\" meow done $args" 2>>"$FAKE_LOG"; then
    echo "refused" >> "$FAKE_LOG"
    [ -n "$retry" ] && eval "\"\$PW\" meow done $retry" 2>>"$FAKE_LOG"
  fi
done

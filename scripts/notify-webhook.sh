#!/bin/sh
# A `[notify] command` for chat webhooks: posts breeze's event (breeze-event.v1 JSON, on
# stdin) with a one-line summary to $BREEZE_WEBHOOK_URL.
#   [notify]
#   command = ["sh", "scripts/notify-webhook.sh"]
set -eu
: "${BREEZE_WEBHOOK_URL:?set BREEZE_WEBHOOK_URL to the webhook to post to}"
event=$(cat)
summary=$(printf '%s' "${BREEZE_NOTIFY_SUMMARY:-breeze}" | sed 's/\\/\\\\/g; s/"/\\"/g')
printf '{"text":"breeze: %s","event":%s}\n' "$summary" "$event" |
    curl --fail --silent --show-error --max-time 20 \
        -H 'Content-Type: application/json' --data-binary @- "$BREEZE_WEBHOOK_URL"

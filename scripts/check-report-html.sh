#!/usr/bin/env bash
# Renders a `breeze report --html` page in a real headless browser (Chromium) and checks
# what it shows, then takes a screenshot of it.
#
#   scripts/check-report-html.sh                     # breeze demo, then its page
#   scripts/check-report-html.sh REPORT.html OUT.png # a page written already
#
# Without arguments it runs `breeze demo` (scripted agents) in a temporary folder, writes
# its page with `breeze report --html` and checks that; the breeze binary is $BREEZE, or
# target/debug/breeze (built with cargo when missing), the screenshot goes to $OUT
# (default: target/report-html.png).
#
# A small harness page loads the report in a frame and measures the rendered page: the
# timeline and the conflict graph drawn with a real size, one row per lane, every bar
# with a width, each task's phase bars tiling its stay, each worker attempt a bar of its
# own, no two labels on top of each other, a table row per task of the plan (in the task
# table and in "where the time went"), the inline stylesheet applied, and nothing
# fetched but local files (the browser is also pointed at a proxy that does not exist,
# so any fetch from the network would fail). Then the same page in an 800-pixel window:
# it does not scroll sideways, and its tables fit their boxes. The page itself must log
# nothing to the console. It prints one line per check (`ok …` or `FAIL …`).
#
# Exit status: 0 every check passed, 1 a check failed, 2 usage, 77 no Chromium found
# (set CHROMIUM to the browser's path if it is not on PATH as chromium, chromium-browser
# or google-chrome).
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
demo=""
case $# in
  0)
    breeze=${BREEZE:-$root/target/debug/breeze}
    if [ -z "${BREEZE:-}" ] && [ -n "${CARGO_TARGET_DIR:-}" ]; then
      breeze=$CARGO_TARGET_DIR/debug/breeze
    fi
    if [ ! -x "$breeze" ]; then
      (cd "$root" && cargo build --quiet -p breeze-cli)
    fi
    demo=$(mktemp -d)
    "$breeze" demo --dir "$demo/demo" >"$demo/demo.log" 2>&1 || {
      echo "FAIL breeze demo failed:" >&2
      tail -n 20 "$demo/demo.log" >&2
      exit 1
    }
    report=$(cd "$demo/demo" && "$breeze" report --html)
    echo "ok demo run, its page: $report"
    shot=$(realpath -m "${OUT:-$root/target/report-html.png}")
    ;;
  2)
    report=$(realpath "$1")
    shot=$(realpath -m "$2")
    ;;
  *)
    echo "usage: $0 [REPORT.html OUT.png]" >&2
    exit 2
    ;;
esac
[ -f "$report" ] || { echo "no such file: $report" >&2; exit 2; }

browser=${CHROMIUM:-}
if [ -z "$browser" ]; then
  for name in chromium chromium-browser google-chrome google-chrome-stable; do
    if command -v "$name" >/dev/null 2>&1; then
      browser=$(command -v "$name")
      break
    fi
  done
fi
if [ -z "$browser" ]; then
  echo "no Chromium found (apt-get install chromium, or set CHROMIUM)" >&2
  exit 77
fi

work=$(mktemp -d)
trap 'rm -rf "$work" ${demo:+"$demo"}' EXIT

# The file:// URL of an absolute path, every byte but the unreserved ones percent-encoded.
file_url() {
  local LC_ALL=C path=$1 out="" c i
  for ((i = 0; i < ${#path}; i++)); do
    c=${path:i:1}
    case $c in
      [A-Za-z0-9/._~-]) out+=$c ;;
      *) out+=$(printf '%%%02X' "'$c") ;;
    esac
  done
  printf 'file://%s' "$out"
}

flags=(
  --headless=new --no-sandbox --disable-gpu --disable-dev-shm-usage --no-first-run
  --no-default-browser-check --disable-extensions --hide-scrollbars --mute-audio
  --user-data-dir="$work/profile" --proxy-server=127.0.0.1:9 --proxy-bypass-list='<-loopback>'
)

# 1. The screenshot, as a reader sees the page.
mkdir -p "$(dirname "$shot")"
rm -f "$shot"
timeout 120 "$browser" "${flags[@]}" --window-size=1400,2000 --screenshot="$shot" \
  --enable-logging=stderr --v=0 "$(file_url "$report")" >"$work/screenshot.log" 2>&1 || true
if [ ! -s "$shot" ] || [ "$(head -c 4 "$shot" | tail -c 3)" != "PNG" ]; then
  echo "FAIL no screenshot was written; the browser said:" >&2
  tail -n 20 "$work/screenshot.log" >&2
  exit 1
fi
echo "ok screenshot $shot"
# What the page logged (it has no script: a message means something went wrong).
if grep -a ':CONSOLE' "$work/screenshot.log" >"$work/console.log"; then
  echo "FAIL the page logged to the console:" >&2
  head -n 10 "$work/console.log" >&2
  exit 1
fi
echo "ok console: nothing logged"

# 2. The rendered page, measured by a harness page around it: in a wide window (every
# check), then in an 800-pixel one (the layout checks).
harness() {
  local width=$1
  printf '<!DOCTYPE html>\n<html><head><meta charset="utf-8"></head><body style="margin:0">\n'
  printf '<pre id="result">pending: the report did not finish loading</pre>\n'
  printf '<iframe id="page" src="%s" width="%s" height="2000" style="border:0"></iframe>\n<script>\n' "$(file_url "$report")" "$width"
  printf 'const WIDTH = %s;\n' "$width"
  cat <<'JS'
function check() {
  const out = [];
  const ok = (m) => out.push('ok ' + m);
  const fail = (m) => out.push('FAIL ' + m);
  const frame = document.getElementById('page');
  let doc = null;
  try { doc = frame.contentDocument; } catch (e) { fail('cannot read the page: ' + e); }
  if (!doc || !doc.body || !doc.body.children.length) {
    fail('the page did not load');
    return out;
  }
  const box = (el) => el.getBoundingClientRect();
  const size = (el) => Math.round(box(el).width) + 'x' + Math.round(box(el).height);

  if (WIDTH <= 800) {
    const root = doc.documentElement;
    (root.scrollWidth <= root.clientWidth + 1 ? ok : fail)(
      `at ${WIDTH} px the page does not scroll sideways (${root.scrollWidth} of ${root.clientWidth} px)`);
    for (const id of ['tasks', 'spent']) {
      const table = doc.querySelector('table#' + id);
      if (!table) { fail(`at ${WIDTH} px: no table#${id}`); continue; }
      const holder = table.parentElement;
      const [wide, room] = [Math.round(box(table).width), Math.round(box(holder).width)];
      (wide <= room + 1 ? ok : fail)(`at ${WIDTH} px table#${id} fits its box (${wide} of ${room} px)`);
    }
    const rows = [...doc.querySelectorAll('table#tasks tbody tr')];
    const squeezed = rows.filter((r) => box(r.querySelector('td:nth-child(2)')).width < 60);
    (squeezed.length ? fail : ok)(`at ${WIDTH} px every title keeps a readable column (${squeezed.length} squeezed)`);
    return out;
  }

  const timeline = doc.querySelector('svg#timeline');
  if (!timeline) {
    fail('no timeline');
  } else {
    const b = box(timeline);
    (b.width >= 600 && b.height >= 60 ? ok : fail)('timeline drawn ' + size(timeline));
    const lanes = [...timeline.querySelectorAll('.lane-row')].map((g) => g.dataset.lane);
    (lanes.length ? ok : fail)('lanes ' + lanes.join(' '));
    const bars = [...timeline.querySelectorAll('rect.piece')];
    const flat = bars.filter((r) => box(r).width < 0.9 || box(r).height < 10);
    (bars.length && !flat.length ? ok : fail)(`bars ${bars.length} (${flat.length} without a size)`);
    const phases = [...new Set(bars.map((r) => r.getAttribute('class').replace('piece phase-', '')))];
    ok('phases ' + phases.sort().join(' '));
    let untiled = 0;
    for (const stay of timeline.querySelectorAll('g.stay')) {
      const outline = box(stay.querySelector('rect.outline'));
      const pieces = [...stay.querySelectorAll('rect.piece')].map(box).sort((a, b) => a.left - b.left);
      let at = outline.left;
      for (const p of pieces) {
        if (Math.abs(p.left - at) > 1.5 || p.right > outline.right + 1.5) untiled++;
        at = p.right;
      }
      if (pieces.length && Math.abs(at - outline.right) > 1.5) untiled++;
    }
    (untiled ? fail : ok)(`each stay tiled by its phase bars (${untiled} gaps or overlaps)`);
    // Each worker attempt a bar of its own: as many drawn as the task table counts.
    const drawn = {};
    for (const piece of timeline.querySelectorAll('g.stay rect.piece[data-attempt]')) {
      const task = piece.parentElement.dataset.task;
      (drawn[task] = drawn[task] || new Set()).add(piece.dataset.attempt);
    }
    const wrong = [];
    let attempts = 0;
    for (const row of doc.querySelectorAll('table#tasks tbody tr')) {
      const counted = parseInt(row.querySelector('td.num').textContent, 10);
      const bars = drawn[row.dataset.task] ? drawn[row.dataset.task].size : 0;
      attempts += bars;
      if (bars !== counted) wrong.push(`${row.dataset.task}: ${bars} of ${counted}`);
    }
    const failed = timeline.querySelectorAll('rect.attempt-failed').length;
    (wrong.length ? fail : ok)(`a bar per worker attempt: ${attempts}, ${failed} failed (${wrong.join(', ') || 'each as counted'})`);
    const stays = [...timeline.querySelectorAll('rect.outline')].map(box);
    const left = Math.min(...stays.map((s) => s.left)), right = Math.max(...stays.map((s) => s.right));
    (right - left >= b.width * 0.5 ? ok : fail)(`the bars span ${Math.round(right - left)} of ${Math.round(b.width)} px`);
  }

  const graph = doc.querySelector('svg#conflict-graph');
  if (!graph) {
    fail('no conflict graph');
  } else {
    const nodes = [...graph.querySelectorAll('g.node')];
    const boxes = nodes.map((n) => box(n.querySelector('rect:last-of-type')));
    let touching = 0;
    for (let i = 0; i < boxes.length; i++)
      for (let j = i + 1; j < boxes.length; j++) if (overlap(boxes[i], boxes[j]) > 1) touching++;
    (nodes.length && !touching ? ok : fail)(
      `graph drawn ${size(graph)}: ${nodes.length} tasks, ${graph.querySelectorAll('g.conflict').length} conflicts, ` +
      `${graph.querySelectorAll('path.dependency').length} dependencies, ${touching} overlapping nodes`);
  }

  const labels = [...doc.querySelectorAll('svg text')].filter((t) => t.textContent.trim());
  const clashes = [];
  for (let i = 0; i < labels.length; i++)
    for (let j = i + 1; j < labels.length; j++)
      if (overlap(box(labels[i]), box(labels[j])) > 2)
        clashes.push(`"${labels[i].textContent}"/"${labels[j].textContent}"`);
  (clashes.length ? fail : ok)(`labels ${labels.length}, overlapping: ${clashes.slice(0, 5).join(', ') || 'none'}`);

  const rows = [...doc.querySelectorAll('table#tasks tbody tr')];
  const hidden = rows.filter((r) => box(r).height < 12 || box(r).width < 600);
  (rows.length && !hidden.length ? ok : fail)('tasks ' + rows.map((r) => r.dataset.task).join(' '));
  if (graph) {
    const planned = graph.querySelectorAll('g.node').length;
    (planned === rows.length ? ok : fail)(`a table row per task of the plan (${rows.length} of ${planned})`);
    const spent = doc.querySelectorAll('table#spent tbody tr[data-task]').length;
    const whole = doc.querySelectorAll('table#spent tbody tr.run').length;
    (spent === planned && whole === 1 ? ok : fail)(`where the time went: the run and a row per task (${spent} of ${planned})`);
  }
  const th = doc.querySelector('table#tasks th');
  const styled = th && getComputedStyle(th).backgroundColor !== 'rgba(0, 0, 0, 0)';
  (styled ? ok : fail)('stylesheet applied');
  const links = [...doc.querySelectorAll('a[href]')].filter((a) => !a.getAttribute('href').startsWith('#'));
  ok('links ' + links.length);

  const fetched = frame.contentWindow.performance.getEntriesByType('resource')
    .map((e) => e.name).filter((name) => !name.startsWith('file:'));
  (fetched.length ? fail : ok)('fetched from the network: ' + (fetched.join(' ') || 'nothing'));
  return out;
}
function overlap(a, b) {
  const w = Math.min(a.right, b.right) - Math.max(a.left, b.left);
  const h = Math.min(a.bottom, b.bottom) - Math.max(a.top, b.top);
  return w > 0 && h > 0 ? w * h : 0;
}
window.addEventListener('load', () => {
  let lines;
  try { lines = check(); } catch (e) { lines = ['FAIL the check broke: ' + e]; }
  document.getElementById('result').textContent = lines.join('\n');
});
JS
  printf '</script>\n</body></html>\n'
}

result=""
for width in 1400 800; do
  harness "$width" >"$work/harness-$width.html"
  timeout 120 "$browser" "${flags[@]}" --allow-file-access-from-files --virtual-time-budget=10000 \
    --window-size="$width",2000 --dump-dom "$(file_url "$work/harness-$width.html")" >"$work/dom.html" 2>"$work/dom.log" || true
  lines=$(sed -n '/<pre id="result">/,/<\/pre>/p' "$work/dom.html" |
    sed -e 's/<pre id="result">//' -e 's/<\/pre>.*//' -e 's/&lt;/</g' -e 's/&gt;/>/g' -e 's/&quot;/"/g' -e 's/&amp;/\&/g')
  if [ -z "$lines" ]; then
    echo "FAIL the browser printed no page at $width px; it said:" >&2
    tail -n 20 "$work/dom.log" >&2
    exit 1
  fi
  result+="$lines"$'\n'
done
result=${result%$'\n'}
printf '%s\n' "$result"
if printf '%s\n' "$result" | grep -q -e '^FAIL' -e '^pending'; then
  exit 1
fi

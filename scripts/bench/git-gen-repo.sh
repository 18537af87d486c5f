#!/usr/bin/env bash
# Generates a git repository with N small text files on `main` (one commit), checked out.
#
#   scripts/bench/git-gen-repo.sh DIR [N]       (N defaults to 20000)
#
# Layout: src/dNNN/dMM/fNNNNNN.txt, 50 files per leaf directory, 40 leaf directories per top
# directory, so 20k files make 10 top dirs / 400 leaf dirs and 100k make 50 / 2000. Content is
# deterministic, so two runs with the same N give the same commit ids.
set -euo pipefail
dir=${1:?usage: git-gen-repo.sh DIR [N]}
n=${2:-20000}
if [ -e "$dir" ]; then echo "git-gen-repo: $dir already exists" >&2; exit 2; fi
git init -q -b main "$dir"
cd "$dir"
git config user.name "Bench User"
git config user.email "bench@example.com"
awk -v n="$n" 'BEGIN {
  print "commit refs/heads/main"
  print "mark :1"
  print "author Bench User <bench@example.com> 1700000000 +0000"
  print "committer Bench User <bench@example.com> 1700000000 +0000"
  msg = "initial: " n " files"
  print "data " length(msg); print msg
  for (i = 0; i < n; i++) {
    leaf = int(i / 50); top = int(leaf / 40); mid = leaf % 40
    path = sprintf("src/d%03d/d%02d/f%06d.txt", top, mid, i)
    body = sprintf("file %d\nline two of file %d\nline three %d\n", i, i, i * 7)
    print "M 100644 inline " path
    print "data " length(body)
    printf "%s\n", body
  }
  print "done"
}' | git fast-import --quiet --done
git reset -q --hard main
printf '.env\ntarget/\n' > .gitignore
git add .gitignore
git commit -q -m "add .gitignore"

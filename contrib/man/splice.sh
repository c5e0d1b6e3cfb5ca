#!/usr/bin/env bash
# make man: replaces the boilerplate EXIT STATUS section of each generated page (MAN_OUT/<page>.1)
# with contrib/man/<page>.exit and puts contrib/man/files.mdoc before it as the FILES section (the
# conventional order). A page without its .exit file is an error: every command documents its exit codes.
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
out=${1:?usage: splice.sh MAN_OUT}
for page in "$out"/*.1; do
  name=$(basename "$page" .1)
  exit_file="$here/$name.exit"
  [[ -f $exit_file ]] || { echo "splice.sh: no $exit_file for $name.1: write its EXIT STATUS" >&2; exit 1; }
  grep -q '^\.Sh "\{0,1\}EXIT STATUS"\{0,1\}$' "$page" || { echo "splice.sh: $page has no EXIT STATUS section" >&2; exit 1; }
  # NAME: `.Nm "dropfetch add"` (two words) is a name whatis/lexgrog cannot read, so it becomes the
  # page name, dropfetch.add; the synopsis and text keep "dropfetch add" (each bare .Nm gets it).
  awk -v exitfile="$exit_file" -v filesfile="$here/files.mdoc" -v page="$name" '
    function cat(file,   line) { while ((getline line < file) > 0) print line; close(file) }
    /^\.Nm "[^"]* [^"]*"$/ && !named { command = substr($0, 5); print ".Nm " page; named = 1; next }
    /^\.Nm$/ && command != "" { print ".Nm " command; next }
    /^\.Sh / {
      title = $0; sub(/^\.Sh "?/, "", title); sub(/"?$/, "", title)
      if (skipping) skipping = 0
      if (title == "EXIT STATUS") { print ".Sh FILES"; cat(filesfile); print ".Sh EXIT STATUS"; cat(exitfile); skipping = 1; next }
    }
    !skipping { print }
  ' "$page" >"$page.tmp"
  mv "$page.tmp" "$page"
done

# find_axe ROOT: axe-core, the accessibility rules the console's browser
# tests run in every page they visit, installed from the npm registry with
# `npm ci` at the version locked in axe/package-lock.json. It goes into
# ROOT/.testenv/axe/<lock's checksum>, so a change of the lock installs
# afresh and runs in parallel share one copy; it is installed into a
# temporary directory and renamed into place, so a concurrent run never
# reads a half-installed one. Exports GATEWAY_TEST_AXE, the path of
# axe.min.js.
find_axe() {
  local root=${1:?usage: find_axe ROOT} lock=$testenv_here/axe/package-lock.json sum dir tmp
  sum=$(sha256sum "$lock" | cut -c1-16)
  dir=$root/.testenv/axe/$sum
  if [ ! -f "$dir/node_modules/axe-core/axe.min.js" ]; then
    command -v npm >/dev/null || apt_install npm || return 1
    mkdir -p "$root/.testenv/axe" || return 1
    tmp=$(mktemp -d "$root/.testenv/axe/.install.XXXXXX") || return 1
    cp "$testenv_here/axe/package.json" "$lock" "$tmp/" || { rm -rf "$tmp"; return 1; }
    echo "testenv: installing axe-core (once; kept in $dir)" >&2
    if ! npm ci --prefix "$tmp" --ignore-scripts --no-audit --no-fund --loglevel=error >&2; then
      rm -rf "$tmp"
      echo "testenv: installing axe-core failed" >&2
      return 1
    fi
    # Another run may have finished first: then its copy is kept.
    mv -T "$tmp" "$dir" 2>/dev/null || rm -rf "$tmp"
  fi
  export GATEWAY_TEST_AXE=$dir/node_modules/axe-core/axe.min.js
  echo "testenv: axe-core at $GATEWAY_TEST_AXE" >&2
}

# find_chromium: Debian's headless-capable Chromium for the console's browser
# tests, installed when missing (as the servers are). Exports
# GATEWAY_TEST_CHROMIUM, the binary's path. Nothing is started here: each
# test starts its own browser with a fresh profile and stops it.
find_chromium() {
  if [ ! -x /usr/bin/chromium ]; then
    apt_install chromium
  fi
  export GATEWAY_TEST_CHROMIUM=/usr/bin/chromium
  echo "testenv: chromium at $GATEWAY_TEST_CHROMIUM" >&2
}

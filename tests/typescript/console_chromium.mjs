// Debian's chromium, headless, for the console's browser tests (CHROMIUM names another):
// the flags keep it from reaching for the network this machine does not have.
import { chromium } from "playwright-core";

export function launchChromium() {
  return chromium.launch({
    executablePath: process.env.CHROMIUM ?? "/usr/bin/chromium",
    args: ["--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run", "--disable-background-networking",
      "--disable-component-update", "--disable-sync"],
  });
}

// Throws `why`: the script fails, and its browser is closed by its `finally`.
export function fail(why) {
  throw new Error(why);
}

// Drive Debian's chromium (headless, WebGPU on SwiftShader) with playwright-core over a page
// served from a local folder on 127.0.0.1 (no network). Usage:
//   node browser_driver.mjs CHROMIUM SITE_DIR REPORT_JSON
import { createServer } from "node:http";
import { readFile, writeFile } from "node:fs/promises";
import { extname, join, normalize } from "node:path";
import { chromium } from "playwright-core";

const [executablePath, site, reportPath] = process.argv.slice(2);
const types = { ".html": "text/html", ".js": "text/javascript", ".json": "application/json", ".wgsl": "text/plain" };
const server = createServer(async (req, res) => {
  const path = normalize(join(site, decodeURIComponent(new URL(req.url, "http://x").pathname)));
  if (!path.startsWith(site)) { res.writeHead(403).end(); return; }
  try {
    const body = await readFile(path);
    res.writeHead(200, { "content-type": types[extname(path)] ?? "application/octet-stream" }).end(body);
  } catch { res.writeHead(404).end(); }
});
await new Promise((ok) => server.listen(0, "127.0.0.1", ok));
const url = `http://127.0.0.1:${server.address().port}/index.html`;
const browser = await chromium.launch({
  executablePath,
  headless: true,
  args: ["--enable-unsafe-webgpu", "--use-webgpu-adapter=swiftshader", "--use-vulkan=swiftshader",
         "--enable-features=Vulkan", "--no-sandbox", "--disable-gpu-sandbox"],
});
try {
  const page = await browser.newPage();
  const logs = [];
  page.on("console", (m) => logs.push(m.text()));
  await page.goto(url);
  await page.waitForFunction(() => window.__result !== undefined, null, { timeout: 240000 });
  const result = await page.evaluate(() => window.__result);
  await writeFile(reportPath, JSON.stringify({ ...result, logs }, null, 1));
} finally {
  await browser.close();
  server.close();
}

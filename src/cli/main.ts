/** Entry point of the `writ` binary (bin/writ.js loads it through tsx). */
import { runCli } from "./run.js";

const code = await runCli(process.argv.slice(2), {
  cwd: process.cwd(),
  env: process.env,
  io: { stdout: process.stdout, stderr: process.stderr, stdoutIsTTY: process.stdout.isTTY === true },
});
process.exitCode = code;

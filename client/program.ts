import { DEFAULT_API_URL } from "../core/config/exposure.js";
// The client commands of `media-service` (docs/cli.md): their options, help and examples. What
// they do is imported when one runs, so the server commands of the same binary never load it.
import { InvalidArgumentError, Option, type Command } from "commander";
import { JOB_STATES, JOB_STATUSES } from "../core/jobs/types.js";
import type { ApiClient } from "./api.js";
import { CliError, EXIT } from "./errors.js";
import type { Output } from "./output.js";
import { parametersHelp } from "./parameters.js";

/** The global options every client command reads. */
export interface GlobalOptions {
  url: string;
  apiKey?: string;
  json?: boolean;
  color?: boolean;
}

export const DEFAULT_URL = DEFAULT_API_URL;

/** Adds --url, --api-key, --json and --no-color to the program. */
export function addGlobalOptions(program: Command): void {
  program
    .addOption(new Option("--url <url>", "the API's address").env("MEDIA_SERVICE_URL").default(DEFAULT_URL))
    .addOption(new Option("--api-key <key>", "an API key, sent as X-API-Key").env("MEDIA_SERVICE_API_KEY"))
    .option("--json", "machine output: one JSON document on stdout (docs/cli.md)")
    .option("--no-color", "no colours (also when NO_COLOR is set or stdout is not a terminal)");
}

const example = (...lines: string[]) => `\nexample:\n${lines.map((l) => `  $ ${l}`).join("\n")}\n`;

/** A whole number option (--priority, --limit, --timeout); anything else is a usage error. */
function integer(raw: string): number {
  if (!/^\s*[+-]?\d+\s*$/.test(raw)) throw new InvalidArgumentError("must be a whole number.");
  return Number(raw);
}

type Run = (api: ApiClient, out: Output) => Promise<number>;

/** The job filters of `jobs` and `bulk` (client/bulk.ts filterQuery reads them). */
function addFilterOptions(command: Command): Command {
  const status = new Option("--status <status>", "only jobs of this status (failed: cancelled too)").choices(
    JOB_STATUSES,
  );
  return command
    .addOption(status)
    .addOption(
      new Option("--state <state>", "only jobs in this state (failed: not cancelled; cancelled)").choices(
        JOB_STATES,
      ),
    )
    .option("--type <type>", "only jobs of this type (image_resize or image/resize)")
    .option("--batch <id>", "only the jobs of this batch")
    .option("--client <name>", "only the jobs of this client (admin keys only)")
    .option("--since <duration>", "only jobs created in this last while (30m, 1h, 7d)")
    .option("--created-after <time>", "only jobs created after this ISO 8601 time")
    .option("--created-before <time>", "only jobs created before this ISO 8601 time")
    .option(
      "--search <text>",
      "one search box: a job id or id prefix, a request id, or a bucket/key prefix of a source or output",
    )
    .option("--id-prefix <prefix>", "only jobs whose id starts with this")
    .option("--request-id <id>", "only jobs submitted with this request id")
    .option("--source <prefix>", "only jobs whose source starts with this (s3://bucket/key… or bucket/key…)")
    .option("--dest <prefix>", "only jobs whose output starts with this (s3://bucket/key… or bucket/key…)");
}

/**
 * Options the command cannot run without, checked before its action, which is after commander has
 * refused unknown options: `submit … --wiat` says that --wiat is unknown, not that --source is missing.
 */
function mandatory(command: Command, ...flags: string[]): void {
  command.hook("preAction", () => {
    for (const flags_ of flags) {
      const option = command.options.find((o) => o.flags === flags_);
      if (option && command.getOptionValue(option.attributeName()) === undefined) {
        command.error(`error: required option '${option.flags}' not specified`, {
          code: "commander.missingMandatoryOptionValue",
          exitCode: 2,
        });
      }
    }
  });
}

/**
 * Adds the client commands. `done` receives each command's exit code; a CliError is printed as one
 * line (`error: …`) and ends with its code, anything unexpected with 1, never with a stack trace.
 */
export function addClientCommands(program: Command, done: (code: number) => void): void {
  const run = async (command: Command, body: Run): Promise<void> => {
    const globals = command.optsWithGlobals<GlobalOptions>();
    const [{ createOutput }, { ApiClient }] = await Promise.all([import("./output.js"), import("./api.js")]);
    const out = createOutput({ json: globals.json, color: globals.color });
    try {
      const api = new ApiClient({ url: globals.url, apiKey: globals.apiKey });
      done(await body(api, out));
    } catch (err) {
      const message = err instanceof Error ? err.message : String(err);
      out.note(`${out.err.red("error:")} ${message}`);
      done(err instanceof CliError ? err.exitCode : EXIT.failure);
    }
  };

  program.commandsGroup("client commands (a running service, through its API and object store):");

  const put = program
    .command("put")
    .summary("upload a file to the object store")
    .description(
      "Upload FILE to the object store the service uses (S3_ENDPOINT and its credentials, else the embedded store `media-service start` runs; a bucket missing there is created). The content type comes from the file's extension; a key ending in / gets the file's name.",
    )
    .argument("<file>", "the file to upload")
    .argument("<destination>", "s3://bucket/key")
    .addHelpText("after", example("media-service put photo.jpg s3://media/in/photo.jpg"));
  put.action((file: string, destination: string) =>
    run(put, async (api, out) => {
      const storage = await import("./storage.js");
      return storage.put(file, destination, out, storage.openStore(process.env, api.baseUrl));
    }),
  );

  const get = program
    .command("get")
    .summary("download an object from the object store")
    .description(
      "Download an object to FILE (- for stdout; into a directory under the key's name). The object store is the one put uses.",
    )
    .argument("<source>", "s3://bucket/key")
    .argument("<file>", "where to write it, or - for stdout")
    .addHelpText(
      "after",
      example(
        "media-service get s3://media/out/photo.webp photo.webp",
        "media-service get s3://media/out/photo.webp - | display",
      ),
    );
  get.action((source: string, file: string) =>
    run(get, async (api, out) => {
      const storage = await import("./storage.js");
      return storage.get(source, file, out, storage.openStore(process.env, api.baseUrl));
    }),
  );

  const submit = program
    .command("submit")
    .summary("submit a job")
    .description(
      "Submit a job of TYPE (image_resize or its path image/resize; docs/job-types.md lists the types and their parameters). Parameters are key=value: a value that parses as JSON is taken as JSON (800, true, [1,2]), any other as a string. Prints the job id; with --wait follows the job with a progress bar and prints its result (exit 0 completed, 1 failed, 3 cancelled).",
    )
    .argument("<type>", "the job type, e.g. image_resize or image/resize")
    .argument("[parameters...]", "the job's parameters as key=value")
    // Required, but checked after commander's check of unknown options (see mandatory): a misspelt
    // option is named as such rather than hidden behind a missing --source.
    .option("--source <s3url>", "the source file, s3://bucket/key (required)")
    .option(
      "--dest <s3url>",
      "where the output goes, s3://bucket/key (types that write a file; s3://bucket/prefix for those that write many)",
    )
    .option("--params <json>", "parameters as a JSON object (key=value pairs win)")
    .option(
      "--file <path>",
      "parameters from a JSON or YAML file, such as a pipeline's steps (--params and key=value pairs win)",
    )
    .option(
      "--template <name>",
      "submit with this template (templates list): its parameters and destination; the parameters given are overrides it allows",
    )
    .option("--template-version <n>", "with --template: this version of it", integer)
    .option(
      "--dest-prefix <s3url>",
      "with --template: s3://bucket/prefix, the {prefix} of the template's dest_key",
    )
    .option("--priority <n>", "place in the type's queue, -50 to 50 (higher runs first)", integer)
    .option("--webhook-url <url>", "notified when the job ends")
    .option("--timeout <seconds>", "processing time limit", integer)
    .option(
      "--idempotency-key <key>",
      "repeat the command safely: the same key and request make no second job",
    )
    .option("--wait", "follow the job to its end and print its result")
    .addHelpText(
      "after",
      example(
        "media-service submit image/resize --source s3://media/in/photo.jpg --dest s3://media/out/photo.webp width=800 height=600 format=webp --wait",
        "media-service submit image_colors --source s3://media/in/photo.jpg color_count=3 --json",
        "media-service submit pipeline --source s3://media/in/photo.jpg --dest s3://media/out/photo --file steps.yaml --wait",
        "media-service submit image/resize --template thumb --source s3://media/in/photo.jpg --dest-prefix s3://media/thumbs quality=70",
      ),
    );
  submit.addHelpText("after", parametersHelp);
  mandatory(submit, "--source <s3url>");
  submit.action((type: string, parameters: string[]) =>
    run(submit, async (api, out) =>
      (await import("./jobs.js")).submit(api, out, type, parameters, submit.opts()),
    ),
  );

  addTemplateCommands(program, run);

  const batch = program
    .command("batch")
    .summary("batches of jobs")
    .description("Batches of jobs: `batch submit FILE.jsonl`.")
    .addHelpText("after", example("media-service batch submit jobs.jsonl --wait"));
  const batchSubmit = batch
    .command("submit")
    .summary("submit a batch from a JSON Lines file")
    .description(
      'Submit a batch of 1 to 100 jobs: FILE holds one entry a line, as in POST /api/v1/jobs/batch ({"type": "image_resize", "source_bucket": …, "parameters": {…}}), - reads stdin. Prints the batch id; with --wait shows one bar for the batch and lists its failed jobs (exit 1 if any failed).',
    )
    .argument("<file>", "a .jsonl file, one batch entry a line (- for stdin)")
    .option("--fail-fast", "stop the batch at its first failure")
    .option("--priority <n>", "priority of the entries that give none", integer)
    .option("--batch-id <id>", "the batch's id (generated when absent)")
    .option("--webhook-url <url>", "notified when the batch ends")
    .option(
      "--idempotency-key <key>",
      "repeat the command safely: the same key and request make no second batch",
    )
    .option("--wait", "follow the batch to its end")
    .addHelpText(
      "after",
      `${example("media-service batch submit jobs.jsonl --wait")}
jobs.jsonl:
  {"type":"image_resize","source_bucket":"media","source_key":"in/a.jpg","dest_bucket":"media","dest_key":"out/a.jpg","parameters":{"width":320,"height":240}}
  {"type":"image_colors","source_bucket":"media","source_key":"in/a.jpg"}
`,
    );
  batchSubmit.action((file: string) =>
    run(batchSubmit, async (api, out) =>
      (await import("./batch.js")).submitBatch(api, out, file, batchSubmit.opts()),
    ),
  );

  const jobs = addFilterOptions(
    program
      .command("jobs")
      .summary("list and search jobs, newest first")
      .description(
        "List jobs, newest first (GET /api/v1/jobs), with their source, output, duration and error. Filters pass through to the API; --search and the prefix options find jobs by id, request id, source or output. When there are more, the last line says the --cursor of the next page, and --all follows every page.",
      ),
  )
    .option("--limit <n>", "at most this many jobs a page", integer)
    .option("--cursor <cursor>", "the page after the one that gave this cursor")
    .option("--all", "every page")
    .addHelpText(
      "after",
      example(
        "media-service jobs --state failed --limit 20",
        "media-service jobs --state cancelled",
        "media-service jobs --search 3f0c2a8e",
        "media-service jobs --source s3://media/in/2026/ --state failed",
        "media-service jobs --all --json",
      ),
    );
  jobs.action(() => run(jobs, async (api, out) => (await import("./jobs.js")).list(api, out, jobs.opts())));

  const job = program
    .command("job")
    .summary("show a job")
    .description("Show a job's record: its state, locations, parameters and result or error.")
    .argument("<id>", "the job's id")
    .addHelpText("after", example("media-service job 3f0c2a8e-5d1b-4c3a-9e7f-1a2b3c4d5e6f"));
  job.action((id: string) => run(job, async (api, out) => (await import("./jobs.js")).show(api, out, id)));

  const watch = program
    .command("watch")
    .summary("follow a job to its end")
    .description(
      "Follow a job with a progress bar until it ends, then print its result (exit 0 completed, 1 failed, 3 cancelled).",
    )
    .argument("<id>", "the job's id")
    .addHelpText("after", example("media-service watch 3f0c2a8e-5d1b-4c3a-9e7f-1a2b3c4d5e6f"));
  watch.action((id: string) =>
    run(watch, async (api, out) => (await import("./jobs.js")).watch(api, out, id)),
  );

  const cancel = program
    .command("cancel")
    .summary("cancel a pending or processing job")
    .description("Cancel a pending or processing job: it fails with `cancelled by request`.")
    .argument("<id>", "the job's id")
    .addHelpText("after", example("media-service cancel 3f0c2a8e-5d1b-4c3a-9e7f-1a2b3c4d5e6f"));
  cancel.action((id: string) =>
    run(cancel, async (api, out) => (await import("./jobs.js")).cancel(api, out, id)),
  );

  const retry = program
    .command("retry")
    .summary("submit a failed job again")
    .description(
      "Submit a failed job again as a new job of the same type, locations and parameters; prints the new job's id, or with --wait follows it. A job retried before is not retried again: the command names its existing retry (and follows it with --wait) unless --force makes another.",
    )
    .argument("<id>", "the failed job's id")
    .option("--idempotency-key <key>", "repeat the command safely: the same key makes no second retry")
    .option("--wait", "follow the new job to its end and print its result")
    .option("--force", "retry a job that was retried before once more")
    .addHelpText("after", example("media-service retry 3f0c2a8e-5d1b-4c3a-9e7f-1a2b3c4d5e6f --wait"));
  retry.action((id: string) =>
    run(retry, async (api, out) => (await import("./jobs.js")).retry(api, out, id, retry.opts())),
  );

  const bulk = program
    .command("bulk")
    .summary("cancel or retry many jobs")
    .description(
      "Cancel or retry every job a filter matches, or the jobs named: `bulk cancel`, `bulk retry`. Calls POST /api/v1/jobs/bulk/… until every matching job has been gone through (each call at most --limit jobs, the next resuming after the last); a job is changed once however often the command runs. --dry-run only says how many jobs match.",
    )
    .addHelpText(
      "after",
      example(
        "media-service bulk cancel --batch 8d1e… --dry-run",
        "media-service bulk retry --type image_resize --since 1h",
      ),
    );
  for (const action of ["cancel", "retry"] as const) {
    const command = addFilterOptions(
      bulk
        .command(action)
        .summary(
          action === "cancel" ? "cancel pending jobs by filter or id" : "retry failed jobs by filter or id",
        )
        .description(
          action === "cancel"
            ? "Cancel every pending job the filter matches (--status processing: the processing ones), or the jobs named by id. Prints how many were cancelled and why others were skipped."
            : "Retry every failed job the filter matches, or the jobs named by id: each becomes a new job (retry_of). Prints how many were retried and why others were skipped.",
        )
        .argument("[ids...]", "job ids (instead of filter options)"),
    )
      .option("--dry-run", "change nothing: say how many jobs match")
      .option("--limit <n>", "at most this many jobs a call (1-500; the API's default 100)", integer)
      .addHelpText(
        "after",
        example(
          action === "cancel"
            ? "media-service bulk cancel --batch 8d1e… --dry-run"
            : "media-service bulk retry --type image_resize --since 1h",
        ),
      );
    command.action((ids: string[]) =>
      run(command, async (api, out) =>
        (await import("./bulk.js")).bulk(api, out, action, { ...command.opts(), ids }),
      ),
    );
  }

  const stats = program
    .command("stats")
    .summary("queue statistics")
    .description("Jobs per queue (one queue per job type) by state, and in total.")
    .addHelpText("after", example("media-service stats", "media-service stats --json"));
  stats.action(() => run(stats, async (api, out) => (await import("./jobs.js")).stats(api, out)));
}

/** `templates list|get|put|delete` (client/templates.ts). */
function addTemplateCommands(program: Command, run: (command: Command, body: Run) => Promise<void>): void {
  const templates = program
    .command("templates")
    .summary("named recipes of jobs")
    .description(
      "Templates: a job type with its parameters (and where its output goes), stored under a name and reused by `submit --template NAME`. Yours and the configuration's (read-only).",
    )
    .addHelpText(
      "after",
      example("media-service templates put thumb thumb.yaml", "media-service templates list"),
    );
  const load = () => import("./templates.js");
  const list = templates.command("list").summary("list the templates you can use");
  list.action(() => run(list, async (api, out) => (await load()).list(api, out)));
  const get = templates
    .command("get")
    .summary("print a template (JSON)")
    .argument("<name>", "the template's name")
    .option("--version <n>", "this version rather than the current one", integer);
  get.action((name: string) =>
    run(get, async (api, out) =>
      (await load()).get(api, out, name, get.opts<{ version?: number }>().version),
    ),
  );
  const put = templates
    .command("put")
    .summary("store a template's next version from a JSON or YAML file")
    .argument("<name>", "the template's name: lower-case letters, digits, . _ -")
    .argument(
      "<file>",
      "a JSON or YAML file: {type, parameters, overridable, dest_bucket, dest_key} (- for stdin)",
    )
    .addHelpText(
      "after",
      '\nfile (YAML):\n  type: image_resize\n  parameters: {width: 320, height: 240, format: webp}\n  overridable: [quality]\n  dest_key: "{prefix}/{name}.webp"\n',
    );
  put.action((name: string, file: string) =>
    run(put, async (api, out) => (await load()).put(api, out, name, file)),
  );
  const remove = templates
    .command("delete")
    .summary("delete a template and its versions")
    .argument("<name>", "the template's name");
  remove.action((name: string) => run(remove, async (api, out) => (await load()).remove(api, out, name)));
}

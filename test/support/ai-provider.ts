// A local OpenAI-compatible provider for tests: a real HTTP server speaking the chat completions,
// audio transcriptions and models endpoints as hosted providers do (response shapes, error bodies,
// 401 on a wrong key, 404 on an unknown model). It checks what it receives and records every
// problem in `problems` (tests assert there are none): the key, the model, the message shape, that
// every image is a base64 data URL of a decodable JPEG/PNG/WebP within the configured side, that the
// language is named, that uploaded audio decodes. Its answers come from what it was sent: keywords
// and descriptions name the image's main colour, so a test sees the image really reached the model.
// `script()` queues faults for the next requests: statuses (429 with Retry-After, 500), slow
// answers, and garbage (prose, malformed JSON, no choices).
import { execFile } from "node:child_process";
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import {
  createServer,
  type IncomingHttpHeaders,
  type IncomingMessage,
  type Server,
  type ServerResponse,
} from "node:http";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";
import sharp from "sharp";

export interface ReceivedImage {
  format: string;
  width: number;
  height: number;
  /** The colour with the largest mean channel: red, green, blue, or grey/black/white. */
  colour: string;
}

export interface ReceivedRequest {
  method: string;
  path: string;
  headers: IncomingHttpHeaders;
  /** The JSON body of a chat completion. */
  json?: Record<string, unknown>;
  /** The text parts of every message, joined. */
  text?: string;
  images: ReceivedImage[];
  /** A transcription upload: the form fields and the file's facts. */
  form?: {
    fields: Record<string, string>;
    file?: { name: string; type: string; bytes: number; seconds?: number };
  };
  /** The status it was answered with. */
  status?: number;
}

/** One scripted answer, used by the next request instead of the normal one. */
export interface ScriptStep {
  status?: number;
  headers?: Record<string, string>;
  /** An object is sent as JSON; a string as it is. */
  body?: unknown;
  /** A 200 chat completion whose message is this text. */
  content?: string;
  /** Wait this long before answering (a slow model). */
  delayMs?: number;
}

export interface TestAiProviderOptions {
  apiKey?: string;
  model?: string;
  transcriptionModel?: string;
  /** Images with a longer side are a problem: the service must downscale first. */
  maxImageSide?: number;
}

const execFileAsync = promisify(execFile);

export class TestAiProvider {
  readonly requests: ReceivedRequest[] = [];
  readonly problems: string[] = [];
  readonly apiKey: string;
  readonly model: string;
  readonly transcriptionModel: string;
  private readonly maxImageSide: number;
  private readonly steps: ScriptStep[] = [];
  private readonly open = new Set<ServerResponse>();

  private constructor(
    private readonly server: Server,
    readonly baseUrl: string,
    options: TestAiProviderOptions,
  ) {
    this.apiKey = options.apiKey ?? "sk-test-provider-key";
    this.model = options.model ?? "vision-test";
    this.transcriptionModel = options.transcriptionModel ?? "whisper-test";
    this.maxImageSide = options.maxImageSide ?? 1024;
  }

  static async start(options: TestAiProviderOptions = {}): Promise<TestAiProvider> {
    const server = createServer();
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    const { port } = server.address() as AddressInfo;
    const provider = new TestAiProvider(server, `http://127.0.0.1:${port}/v1`, options);
    server.on("request", (req: IncomingMessage, res: ServerResponse) => {
      provider.open.add(res);
      res.on("close", () => provider.open.delete(res));
      const chunks: Buffer[] = [];
      req.on("data", (c: Buffer) => chunks.push(c));
      req.on("end", () => {
        provider
          .handle(req.method ?? "GET", req.url ?? "/", req.headers, Buffer.concat(chunks), res)
          .catch((err: Error) => {
            provider.problems.push(`handler failed: ${err.message}`);
            if (!res.headersSent) send(res, 500, { error: { message: "test provider failed" } });
          });
      });
    });
    return provider;
  }

  /** Queues answers for the next requests, in order. */
  script(...steps: ScriptStep[]): void {
    this.steps.push(...steps);
  }

  /** Requests to one endpoint (`/chat/completions`, `/audio/transcriptions`, `/models`). */
  to(path: string): ReceivedRequest[] {
    return this.requests.filter((r) => r.path === `/v1${path}`);
  }

  reset(): void {
    this.requests.length = 0;
    this.problems.length = 0;
    this.steps.length = 0;
  }

  async close(): Promise<void> {
    for (const res of this.open) res.destroy();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }

  private async handle(
    method: string,
    url: string,
    headers: IncomingHttpHeaders,
    body: Buffer,
    res: ServerResponse,
  ): Promise<void> {
    const path = url.split("?")[0]!;
    const request: ReceivedRequest = { method, path, headers, images: [] };
    this.requests.push(request);
    const answer = (status: number, payload: unknown, extra: Record<string, string> = {}) => {
      request.status = status;
      send(res, status, payload, extra);
    };

    if (headers.authorization !== `Bearer ${this.apiKey}`) {
      return answer(401, {
        error: {
          message: `Incorrect API key provided: ${mask(String(headers.authorization ?? "").replace(/^Bearer /, ""))}.`,
          type: "invalid_request_error",
          code: "invalid_api_key",
        },
      });
    }

    // Checks and records the request before any scripted answer, so faults are checked too.
    if (method === "POST" && path === "/v1/chat/completions") await this.readChat(request, body);
    if (method === "POST" && path === "/v1/audio/transcriptions")
      await this.readUpload(request, headers, body);

    const step = this.steps.shift();
    if (step) {
      if (step.delayMs) await new Promise((r) => setTimeout(r, step.delayMs));
      if (res.destroyed) return;
      if (step.content !== undefined) return answer(200, completion(this.model, step.content));
      request.status = step.status ?? 200;
      res.writeHead(request.status, {
        "content-type": typeof step.body === "string" ? "text/html" : "application/json",
        ...step.headers,
      });
      res.end(typeof step.body === "string" ? step.body : JSON.stringify(step.body ?? {}));
      return;
    }

    if (method === "GET" && path === "/v1/models") {
      return answer(200, {
        object: "list",
        data: [this.model, this.transcriptionModel].map((id) => ({ id, object: "model", owned_by: "test" })),
      });
    }
    if (method === "POST" && path === "/v1/chat/completions") {
      const model = request.json?.model;
      if (model !== this.model) {
        return answer(404, {
          error: {
            message: `The model \`${String(model)}\` does not exist.`,
            type: "invalid_request_error",
            code: "model_not_found",
          },
        });
      }
      return answer(200, completion(this.model, this.reply(request)));
    }
    if (method === "POST" && path === "/v1/audio/transcriptions") {
      const form = request.form;
      if (form?.fields.model !== this.transcriptionModel) {
        return answer(404, { error: { message: `The model \`${form?.fields.model}\` does not exist.` } });
      }
      const seconds = form.file?.seconds ?? 0;
      return answer(200, { text: `A recording of ${seconds.toFixed(1)} seconds of a steady tone.` });
    }
    answer(404, { error: { message: `Invalid URL (${method} ${path})`, type: "invalid_request_error" } });
  }

  private async readChat(request: ReceivedRequest, body: Buffer): Promise<void> {
    let json: Record<string, unknown>;
    try {
      json = JSON.parse(body.toString("utf8")) as Record<string, unknown>;
    } catch {
      this.problems.push("chat completion body is not JSON");
      return;
    }
    request.json = json;
    if (request.headers["content-type"] !== "application/json") {
      this.problems.push(`chat completion content-type ${request.headers["content-type"]}`);
    }
    const messages = json.messages;
    if (!Array.isArray(messages) || messages.length === 0) {
      this.problems.push("chat completion without messages");
      return;
    }
    const texts: string[] = [];
    for (const [i, message] of messages.entries()) {
      const { role, content } = message as { role?: unknown; content?: unknown };
      if (!["system", "user", "assistant"].includes(String(role)))
        this.problems.push(`message ${i}: role ${String(role)}`);
      if (typeof content === "string") {
        texts.push(content);
        continue;
      }
      if (!Array.isArray(content)) {
        this.problems.push(`message ${i}: content is neither text nor parts`);
        continue;
      }
      if (role !== "user") this.problems.push(`message ${i}: content parts in a ${String(role)} message`);
      for (const part of content as Array<{
        type?: unknown;
        text?: unknown;
        image_url?: { url?: unknown };
      }>) {
        if (part.type === "text" && typeof part.text === "string") texts.push(part.text);
        else if (part.type === "image_url" && typeof part.image_url?.url === "string") {
          const image = await this.readImage(part.image_url.url);
          if (image) request.images.push(image);
        } else this.problems.push(`message ${i}: a part of type ${String(part.type)} malformed`);
      }
    }
    request.text = texts.join("\n");
    const format = json.response_format as { type?: unknown; json_schema?: { schema?: unknown } } | undefined;
    if (format !== undefined) {
      if (format.type === "json_schema" && typeof format.json_schema?.schema !== "object") {
        this.problems.push("response_format json_schema without a schema");
      } else if (format.type !== "json_object" && format.type !== "json_schema") {
        this.problems.push(`response_format type ${String(format.type)}`);
      }
    }
  }

  private async readImage(url: string): Promise<ReceivedImage | undefined> {
    const match = /^data:image\/(jpeg|png|webp);base64,([A-Za-z0-9+/]+=*)$/.exec(url);
    if (!match) {
      this.problems.push(`image url is not a base64 JPEG/PNG/WebP data URL: ${url.slice(0, 40)}`);
      return undefined;
    }
    try {
      const image = sharp(Buffer.from(match[2]!, "base64"));
      const [meta, stats] = await Promise.all([image.metadata(), image.stats()]);
      if (meta.format !== match[1])
        this.problems.push(`data URL says ${match[1]}, the bytes are ${meta.format}`);
      if (Math.max(meta.width, meta.height) > this.maxImageSide) {
        this.problems.push(`image of ${meta.width}x${meta.height} is larger than ${this.maxImageSide} px`);
      }
      const [r, g, b] = stats.channels.map((c) => c.mean) as [number, number, number];
      return { format: meta.format, width: meta.width, height: meta.height, colour: colourName(r, g, b) };
    } catch (err) {
      this.problems.push(`image does not decode: ${(err as Error).message}`);
      return undefined;
    }
  }

  private async readUpload(
    request: ReceivedRequest,
    headers: IncomingHttpHeaders,
    body: Buffer,
  ): Promise<void> {
    const type = String(headers["content-type"] ?? "");
    if (!type.startsWith("multipart/form-data")) {
      this.problems.push(`transcription content-type ${type}`);
      return;
    }
    const form = await new Request("http://provider/upload", {
      method: "POST",
      headers: { "content-type": type },
      body,
    }).formData();
    const fields: Record<string, string> = {};
    let file: { name: string; type: string; bytes: number; seconds?: number } | undefined;
    for (const [name, value] of form.entries()) {
      if (typeof value === "string") fields[name] = value;
      else if (name === "file") {
        const bytes = Buffer.from(await value.arrayBuffer());
        file = { name: value.name, type: value.type, bytes: bytes.length };
        const seconds = await audioSeconds(bytes);
        if (seconds === undefined) this.problems.push(`uploaded ${value.name} is not decodable audio`);
        else file.seconds = seconds;
      }
    }
    if (!file) this.problems.push("transcription without a file");
    if (fields.language !== undefined && !/^[a-z]{2}$/.test(fields.language)) {
      this.problems.push(`transcription language ${fields.language} is not ISO-639-1`);
    }
    request.form = { fields, ...(file ? { file } : {}) };
  }

  /** The answer a cooperative model would give. */
  private reply(request: ReceivedRequest): string {
    const text = request.text ?? "";
    const language = /\bin ([A-Z][\p{L} ]+) \(([A-Za-z]{2,3}(?:-[A-Za-z0-9]{2,8})*)\)/u.exec(text);
    if (!language) this.problems.push("the prompt does not name the answer's language as <Name> (<code>)");
    const code = language?.[2]?.toLowerCase() ?? "en";
    const colour = request.images[0]?.colour;
    const wanted = /exactly (\d+) (?:different )?keywords/i.exec(text);
    if (wanted) {
      if (request.images.length !== 1)
        this.problems.push(`keywords asked with ${request.images.length} images`);
      const count = Number(wanted[1]);
      const words = vocabulary(code, colour ?? "grey");
      if (count > words.length)
        this.problems.push(`asked for ${count} keywords, more than the test model knows`);
      return JSON.stringify({
        keywords: words
          .slice(0, count)
          .map((keyword, i) => ({ keyword, confidence: Number((0.98 - i * 0.04).toFixed(2)) })),
      });
    }
    const transcript = /"""\n([\s\S]*?)\n"""/.exec(text)?.[1];
    const subject = transcript
      ? `A recording: ${transcript}`
      : request.images.length > 1
        ? `A video of ${request.images.length} frames, mostly ${colour}`
        : `An image, mostly ${colour}`;
    return JSON.stringify({
      text: code.startsWith("de") ? `Auf Deutsch: ${subject}` : subject,
      tags: [colour ?? "audio", request.images.length > 1 ? "video" : transcript ? "speech" : "still"],
    });
  }
}

function completion(model: string, content: string): object {
  return {
    id: `chatcmpl-${Math.random().toString(36).slice(2)}`,
    object: "chat.completion",
    created: Math.floor(Date.now() / 1000),
    model,
    choices: [{ index: 0, message: { role: "assistant", content }, finish_reason: "stop" }],
    usage: { prompt_tokens: 100, completion_tokens: 50, total_tokens: 150 },
  };
}

function send(
  res: ServerResponse,
  status: number,
  payload: unknown,
  headers: Record<string, string> = {},
): void {
  if (res.destroyed) return;
  res.writeHead(status, { "content-type": "application/json", ...headers });
  res.end(JSON.stringify(payload));
}

function mask(key: string): string {
  return key.length > 8 ? `${key.slice(0, 3)}***${key.slice(-4)}` : "***";
}

function colourName(r: number, g: number, b: number): string {
  const max = Math.max(r, g, b);
  const min = Math.min(r, g, b);
  if (max - min < 40) return max > 200 ? "white" : max < 50 ? "black" : "grey";
  return max === r ? "red" : max === g ? "green" : "blue";
}

const WORDS_EN = [
  "colour",
  "flat",
  "square",
  "simple",
  "minimal",
  "background",
  "texture",
  "abstract",
  "digital",
  "graphic",
  "plain",
  "bright",
  "design",
  "pattern",
  "surface",
  "tone",
  "solid",
  "smooth",
  "modern",
];
const WORDS_DE = [
  "Farbe",
  "Fläche",
  "Quadrat",
  "einfach",
  "minimal",
  "Hintergrund",
  "Struktur",
  "abstrakt",
  "digital",
  "Grafik",
  "schlicht",
  "hell",
  "Design",
  "Muster",
  "Oberfläche",
  "Ton",
  "einfarbig",
  "glatt",
  "modern",
];
const COLOURS_DE: Record<string, string> = {
  red: "Rot",
  green: "Grün",
  blue: "Blau",
  grey: "Grau",
  white: "Weiß",
  black: "Schwarz",
};

/** 20 keywords for an image of this colour; German ones keep their nouns capitalised. */
function vocabulary(language: string, colour: string): string[] {
  if (language.startsWith("de")) return [COLOURS_DE[colour] ?? colour, ...WORDS_DE];
  return [colour, ...WORDS_EN];
}

/** Seconds of audio in an upload, by ffprobe; undefined when it does not decode. */
async function audioSeconds(bytes: Buffer): Promise<number | undefined> {
  const dir = await mkdtemp(join(tmpdir(), "ai-provider-"));
  try {
    const path = join(dir, "upload");
    await writeFile(path, bytes);
    const { stdout } = await execFileAsync("ffprobe", [
      "-v",
      "error",
      "-show_entries",
      "format=duration:stream=codec_type",
      "-of",
      "json",
      path,
    ]);
    const probed = JSON.parse(stdout) as {
      format?: { duration?: string };
      streams?: Array<{ codec_type?: string }>;
    };
    if (!probed.streams?.some((s) => s.codec_type === "audio")) return undefined;
    const seconds = Number(probed.format?.duration);
    return Number.isFinite(seconds) ? seconds : undefined;
  } catch {
    return undefined;
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}

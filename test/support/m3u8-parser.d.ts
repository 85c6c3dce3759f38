// m3u8-parser ships no types: what the tests use of it.
declare module "m3u8-parser" {
  export class Parser {
    push(chunk: string): void;
    end(): void;
    manifest: unknown;
  }
}

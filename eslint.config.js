import js from "@eslint/js";
import { createNodeResolver, importX } from "eslint-plugin-import-x";
import tseslint from "typescript-eslint";

const root = import.meta.dirname;

// Import boundaries between the top-level directories. core/ is the shared base; api/, controller/
// and runner/ each depend on core/ only and never on each other; local/ (the one-machine stack)
// builds on core/ and the embedded S3 store; client/ (the command-line client) builds on core/ and
// talks to the services over the network; cli.ts, the composition root, wires them together and
// may import anything, as may bench/, test/ and scripts/. The embedded S3 store is a workspace
// package of its own (packages/s3-server, @media-service/s3-server): its own files, node built-ins
// and npm packages, nothing of the service; the service imports it by its name only, never by a
// path into its sources (node runs its compiled output, which the name resolves to).
// ui/ is the dashboard, browser code that Vite bundles: it talks to the API over HTTP and imports
// nothing of the services; of core/ only core/jobs/ (the job type and status lists, and the API's
// records as types, erased from the bundle). The services do not import it either: the API serves
// its built files from dist/ui.
// jobs/ holds one folder per job type, in three parts of three layers: definition.ts (and the
// registry, jobs/registry.ts) is base code beside core/, pure schemas and text that core/ reads and
// the services reach through core/jobs/types.ts; processor.ts is runner code, which only runner/
// loads; view.tsx is dashboard code, which only the dashboard's bundle holds.
// Each entry is one forbidden (importer, imported) pair with the rule said in words; the messages
// are what a violation prints.
const BOTH_ON_CORE = "both depend on core/ only, and cli.ts wires them together";
const LOCAL_STACK =
  "the one-machine stack (embedded Redis and S3) is started by cli.ts; the services reach it only through core/ (config, store, storage clients)";
const CORE_BASE =
  "core/ is the shared base that api/, controller/, runner/ and local/ build on, so it imports none of them";
const LOCAL_ON_CORE =
  "local/ builds on core/ and the embedded store's package (@media-service/s3-server) only; cli.ts wires the services to the stack";
const CLIENT =
  "the command-line client talks to the service over HTTP and S3; it builds on core/ (schemas, job types, configuration, the S3 client) and cli.ts wires it in";
const CLIENT_LOCAL =
  "the client reaches the one-machine stack over the network; of local/ it reads only credentials.ts, the embedded store's default credentials";
const UI_OVER_HTTP =
  "the dashboard runs in a browser and talks to the API over HTTP only; it imports none of the services";
const UI_BUILT =
  "ui/ is the dashboard's browser code, bundled by Vite; the API serves the built files (dist/ui) and imports none of it";
const JOB_DEFINITION =
  "a job type's definition (and the registry) is pure schemas and text beside core/, which every process and the dashboard's build read";
const JOB_PROCESSOR =
  "a job type's processor is runner code: only runner/ loads it (by the type's name, lazily)";
const JOB_VIEW = "a job type's view is dashboard code: it builds on ui/src/ and the API's records as types";
const JOB_REGISTRY =
  "the services read the job types through core/jobs/types.ts (the registry, the definitions); a type's processor is runner/'s, its view the dashboard's";
const boundaries = [
  ["api", "controller", `api/ must not import controller/: ${BOTH_ON_CORE}.`],
  ["api", "runner", `api/ must not import runner/: ${BOTH_ON_CORE}.`],
  ["api", "local", `api/ must not import local/: ${LOCAL_STACK}.`],
  ["controller", "api", `controller/ must not import api/: ${BOTH_ON_CORE}.`],
  [
    "controller",
    "runner",
    `controller/ must not import runner/: ${BOTH_ON_CORE} (the runner is started as a process or a Kubernetes Job, not imported).`,
  ],
  ["controller", "local", `controller/ must not import local/: ${LOCAL_STACK}.`],
  ["runner", "api", `runner/ must not import api/: ${BOTH_ON_CORE}.`],
  ["runner", "controller", `runner/ must not import controller/: ${BOTH_ON_CORE}.`],
  ["runner", "local", `runner/ must not import local/: ${LOCAL_STACK}.`],
  ["core", "api", `core/ must not import api/: ${CORE_BASE}.`],
  ["core", "controller", `core/ must not import controller/: ${CORE_BASE}.`],
  ["core", "runner", `core/ must not import runner/: ${CORE_BASE}.`],
  ["core", "local", `core/ must not import local/: ${CORE_BASE}.`],
  ["local", "api", `local/ must not import api/: ${LOCAL_ON_CORE}.`],
  ["local", "controller", `local/ must not import controller/: ${LOCAL_ON_CORE}.`],
  ["local", "runner", `local/ must not import runner/: ${LOCAL_ON_CORE}.`],
  ["client", "api", `client/ must not import api/: ${CLIENT}.`],
  ["client", "controller", `client/ must not import controller/: ${CLIENT}.`],
  ["client", "runner", `client/ must not import runner/: ${CLIENT}.`],
  ["api", "client", `api/ must not import client/: ${CLIENT}.`],
  ["controller", "client", `controller/ must not import client/: ${CLIENT}.`],
  ["runner", "client", `runner/ must not import client/: ${CLIENT}.`],
  ["core", "client", `core/ must not import client/: ${CORE_BASE}.`],
  ["local", "client", `local/ must not import client/: ${LOCAL_ON_CORE}.`],
  ["ui", "api", `ui/ must not import api/: ${UI_OVER_HTTP}.`],
  ["ui", "controller", `ui/ must not import controller/: ${UI_OVER_HTTP}.`],
  ["ui", "runner", `ui/ must not import runner/: ${UI_OVER_HTTP}.`],
  ["ui", "local", `ui/ must not import local/: ${UI_OVER_HTTP}.`],
  ["ui", "client", `ui/ must not import client/: ${UI_OVER_HTTP}.`],
  [
    ["api", "controller", "runner", "core", "local", "client"],
    "ui",
    `the services and the client must not import ui/: ${UI_BUILT}.`,
  ],
];
// The parts of a job type's folder (jobs/<type>/), and what else is in jobs/ (the registry).
const DEFINITIONS = ["jobs/*.ts", "jobs/*/definition.ts"];
const PROCESSORS = "jobs/*/processor.ts";
const VIEWS = "jobs/*/view.tsx";
boundaries.push(
  ...["api", "controller", "runner", "local", "client", "ui"].map((layer) => [
    DEFINITIONS,
    layer,
    `jobs/ definitions must not import ${layer}/: ${JOB_DEFINITION}.`,
  ]),
  [DEFINITIONS, PROCESSORS, `jobs/ definitions must not import a processor: ${JOB_PROCESSOR}.`],
  [DEFINITIONS, VIEWS, `jobs/ definitions must not import a view: ${JOB_VIEW}.`],
  ...["api", "controller", "local", "client", "ui"].map((layer) => [
    PROCESSORS,
    layer,
    `a job type's processor must not import ${layer}/: ${JOB_PROCESSOR}; it builds on runner/ and core/.`,
  ]),
  [PROCESSORS, VIEWS, `a job type's processor must not import a view: ${JOB_VIEW}.`],
  ...["api", "controller", "runner", "local", "client"].map((layer) => [
    VIEWS,
    layer,
    `a job type's view must not import ${layer}/: ${JOB_VIEW}.`,
  ]),
  [VIEWS, PROCESSORS, `a job type's view must not import a processor: ${JOB_PROCESSOR}.`],
  [["api", "controller", "local", "client"], "jobs", `only core/ and runner/ import jobs/: ${JOB_REGISTRY}.`],
  ["core", [PROCESSORS, VIEWS], `core/ reads only the definitions of jobs/: ${JOB_REGISTRY}.`],
  ["runner", [...DEFINITIONS, VIEWS], `runner/ imports only the processors of jobs/: ${JOB_REGISTRY}.`],
  [
    "ui",
    "jobs",
    `ui/ finds the job types' views by their folders and their lists at build time: ${JOB_REGISTRY}.`,
  ],
);
const PRODUCTION = ["api", "controller", "runner", "core", "local", "client", "ui", "jobs"];
const S3_PACKAGE = "packages/s3-server";
const zones = [
  ...boundaries.map(([target, from, message]) => ({ target, from, message })),
  {
    target: "client",
    from: "local",
    except: ["./credentials.ts"],
    message: `client/ must not import local/ but credentials.ts: ${CLIENT_LOCAL}.`,
  },
  {
    target: S3_PACKAGE,
    from: ".",
    except: [`./${S3_PACKAGE}`, "./node_modules"],
    message:
      "packages/s3-server/ is a package of its own (@media-service/s3-server): it imports only its own files, node built-ins and npm packages, nothing of the service (a logger is passed in as pino's Logger type).",
  },
  {
    target: [...PRODUCTION, "cli.ts", "bench", "test", "scripts"],
    from: `${S3_PACKAGE}/src`,
    message:
      "import the embedded S3 store by its package name, @media-service/s3-server, not by a path into its sources: node runs the package's compiled output, which the name resolves to (its package.json exports).",
  },
  {
    target: VIEWS,
    from: "core",
    except: ["./jobs"],
    message:
      "a job type's view imports from core/ only core/jobs/ (the records as types): the rest of core/ is server code, which a browser bundle cannot hold.",
  },
  {
    target: "ui",
    from: "core",
    except: ["./jobs"],
    message:
      "ui/ imports from core/ only core/jobs/ (the job type and status lists, the records as types): the rest of core/ is server code, which a browser bundle cannot hold.",
  },
  {
    target: PRODUCTION,
    from: ["cli.ts", "bench", "test", "scripts"],
    message:
      "service code must not import cli.ts, bench/, test/ or scripts/: they build on the services, not the other way round.",
  },
];

export default tseslint.config(
  { ignores: ["dist/", "packages/*/dist/", "node_modules/", "charts/", ".data/", "coverage/"] },
  js.configs.recommended,
  ...tseslint.configs.recommended,
  {
    languageOptions: {
      globals: {
        process: "readonly",
        console: "readonly",
        URL: "readonly",
        setTimeout: "readonly",
        clearTimeout: "readonly",
        setInterval: "readonly",
        clearInterval: "readonly",
        Buffer: "readonly",
      },
    },
    rules: {
      "@typescript-eslint/no-unused-vars": ["error", { argsIgnorePattern: "^_", varsIgnorePattern: "^_" }],
      "@typescript-eslint/consistent-type-imports": "error",
    },
  },
  {
    files: ["**/*.{ts,tsx,mts,cts,js,mjs,cjs}"],
    plugins: { "import-x": importX },
    settings: {
      // Resolves the `.js` suffix of a relative TypeScript import to the `.ts` file. An import that
      // resolves to nothing is not checked by no-restricted-paths; `tsc --noEmit` fails on those.
      "import-x/resolver-next": [createNodeResolver({ extensionAlias: { ".js": [".ts", ".js"] } })],
    },
    rules: {
      "import-x/no-restricted-paths": ["error", { basePath: root, zones }],
    },
  },
  // Type-aware rules, with types from tsconfig.json through the project service. scripts/gen-docs.ts is
  // outside its include, but in the program all the same: test/component/config-drift.test.ts imports it.
  {
    files: ["**/*.ts", "**/*.tsx"], // eslint.config.js and scripts/*.mjs are not in tsconfig
    extends: [tseslint.configs.recommendedTypeChecked],
    languageOptions: { parserOptions: { projectService: true, tsconfigRootDir: import.meta.dirname } },
    rules: {
      "@typescript-eslint/no-floating-promises": [
        "error",
        {
          allowForKnownSafeCalls: [
            {
              from: "package",
              package: "node:test",
              name: ["test", "it", "describe", "suite", "before", "after", "beforeEach", "afterEach"],
            },
          ],
        },
      ],
      // async () => value to satisfy a Promise-returning signature (fastify handlers, test fixtures): noise, catches nothing here
      "@typescript-eslint/require-await": "off",
    },
  },
  // The service's code takes TypeBox from core/typebox.ts, which the build replaces with one bundle:
  // a file importing the package itself would load its ~250 modules again.
  {
    files: ["{api,controller,runner,core,local,client,jobs}/**/*.ts", "cli.ts"],
    ignores: ["core/typebox.ts"],
    rules: {
      "no-restricted-imports": [
        "error",
        {
          patterns: [
            {
              group: ["@sinclair/typebox", "@sinclair/typebox/*"],
              message: "import TypeBox from core/typebox.ts (bundled into one file by the build)",
            },
          ],
        },
      ],
    },
  },
  // The dashboard: its own TypeScript project (ui/tsconfig.json: DOM, JSX). Values of the API's record
  // schemas would bring TypeBox into the bundle; their types are erased.
  // A job type's view is in the dashboard's project too.
  {
    files: ["ui/**/*.{ts,tsx}", VIEWS],
    rules: {
      "@typescript-eslint/no-restricted-imports": [
        "error",
        {
          patterns: [
            {
              group: [
                "**/core/jobs/*",
                "!**/core/jobs/states.js",
                "!**/core/jobs/eta.js",
                "**/jobs/registry.js",
                "**/jobs/*/definition.js",
              ],
              allowTypeImports: true,
              message:
                "the dashboard imports types only from core/jobs/ and the job types' definitions (erased from the bundle); values only from core/jobs/states.ts (plain lists), core/jobs/eta.ts (a time left in words, shared with the CLI) and virtual:job-types (the job types' lists, made at build time).",
            },
          ],
        },
      ],
    },
  },
  {
    files: [VIEWS],
    languageOptions: { parserOptions: { projectService: false, project: ["./ui/tsconfig.json"] } },
  },
);

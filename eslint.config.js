import js from "@eslint/js";
import { createNodeResolver, importX } from "eslint-plugin-import-x";
import tseslint from "typescript-eslint";

const root = import.meta.dirname;

// Import boundaries between the top-level directories. core/ is the shared base; api/, controller/
// and runner/ each depend on core/ only and never on each other; local/ (the one-machine stack)
// builds on core/ and its embedded S3 store; client/ (the command-line client) builds on core/ and
// talks to the services over the network; cli.ts, the composition root, wires them together and
// may import anything, as may bench/, test/ and scripts/. The S3 store under local/s3/ is a package
// of its own: its own files, node built-ins and npm packages, nothing else of this repository.
// ui/ is the dashboard, browser code that Vite bundles: it talks to the API over HTTP and imports
// nothing of the services; of core/ only core/jobs/ (the job type and status lists, and the API's
// records as types, erased from the bundle). The services do not import it either: the API serves
// its built files from dist/ui.
// Each entry is one forbidden (importer, imported) pair with the rule said in words; the messages
// are what a violation prints.
const BOTH_ON_CORE = "both depend on core/ only, and cli.ts wires them together";
const LOCAL_STACK =
  "the one-machine stack (embedded Redis and S3) is started by cli.ts; the services reach it only through core/ (config, store, storage clients)";
const CORE_BASE =
  "core/ is the shared base that api/, controller/, runner/ and local/ build on, so it imports none of them";
const LOCAL_ON_CORE = "local/ builds on core/ and local/s3/ only; cli.ts wires the services to the stack";
const CLIENT =
  "the command-line client talks to the service over HTTP and S3; it builds on core/ (schemas, job types, configuration, the S3 client) and cli.ts wires it in";
const CLIENT_LOCAL =
  "the client reaches the one-machine stack over the network; of local/ it reads only credentials.ts, the embedded store's default credentials";
const UI_OVER_HTTP =
  "the dashboard runs in a browser and talks to the API over HTTP only; it imports none of the services";
const UI_BUILT =
  "ui/ is the dashboard's browser code, bundled by Vite; the API serves the built files (dist/ui) and imports none of it";
// local/ outside local/s3/: its files and any subdirectory but s3.
const LOCAL_OUTSIDE_S3 = ["local/*", "local/!(s3)/**"];
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
  [LOCAL_OUTSIDE_S3, "api", `local/ must not import api/: ${LOCAL_ON_CORE}.`],
  [LOCAL_OUTSIDE_S3, "controller", `local/ must not import controller/: ${LOCAL_ON_CORE}.`],
  [LOCAL_OUTSIDE_S3, "runner", `local/ must not import runner/: ${LOCAL_ON_CORE}.`],
  ["client", "api", `client/ must not import api/: ${CLIENT}.`],
  ["client", "controller", `client/ must not import controller/: ${CLIENT}.`],
  ["client", "runner", `client/ must not import runner/: ${CLIENT}.`],
  ["api", "client", `api/ must not import client/: ${CLIENT}.`],
  ["controller", "client", `controller/ must not import client/: ${CLIENT}.`],
  ["runner", "client", `runner/ must not import client/: ${CLIENT}.`],
  ["core", "client", `core/ must not import client/: ${CORE_BASE}.`],
  [LOCAL_OUTSIDE_S3, "client", `local/ must not import client/: ${LOCAL_ON_CORE}.`],
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
const PRODUCTION = ["api", "controller", "runner", "core", "local", "client", "ui"];
const zones = [
  ...boundaries.map(([target, from, message]) => ({ target, from, message })),
  {
    target: "client",
    from: "local",
    except: ["./credentials.ts"],
    message: `client/ must not import local/ but credentials.ts: ${CLIENT_LOCAL}.`,
  },
  {
    target: "local/s3",
    from: ".",
    except: ["./local/s3", "./node_modules"],
    message:
      "local/s3/ is a self-contained S3 server: it imports only its own files, node built-ins and npm packages (a logger is passed in as pino's Logger type).",
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
  { ignores: ["dist/", "node_modules/", "charts/", ".data/", "coverage/"] },
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
    files: ["{api,controller,runner,core,local,client}/**/*.ts", "cli.ts"],
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
  {
    files: ["ui/**/*.{ts,tsx}"],
    rules: {
      "@typescript-eslint/no-restricted-imports": [
        "error",
        {
          patterns: [
            {
              group: ["**/core/jobs/*", "!**/core/jobs/types.js"],
              allowTypeImports: true,
              message:
                "ui/ imports types only from core/jobs/ (erased from the bundle); values only from core/jobs/types.ts (plain lists).",
            },
          ],
        },
      ],
    },
  },
);

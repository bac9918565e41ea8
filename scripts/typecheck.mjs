// `tsc --noEmit -p tsconfig.json` and `tsc -p tsconfig.lib.json` as one TypeScript program: the
// whole project is type-checked once, and the SDK's declarations (dist/lib/types) are written from
// that same checker for the files the lib config would emit (those src/index.ts reaches). Two tsc
// runs check the lib's files twice. tsconfig.lib.json may only add emit options to tsconfig.json,
// so the types, and the .d.ts printed from them, are the same. Exits 1 on any error, as tsc does.
//
//   node scripts/typecheck.mjs             the check alone
//   node scripts/typecheck.mjs --lib-types the check, then the declarations
import { dirname, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import ts from 'typescript';

const root = resolve(dirname(fileURLToPath(import.meta.url)), '..');
/** Options that only say what to emit where: the lib config may differ from the check in these. */
const EMIT_ONLY = new Set(['noEmit', 'declaration', 'emitDeclarationOnly', 'rootDir', 'declarationDir', 'configFilePath']);

function parse(file) {
  const host = { ...ts.sys, onUnRecoverableConfigFileDiagnostic: (d) => fail([d]) };
  return ts.getParsedCommandLineOfConfigFile(resolve(root, file), {}, host);
}

function report(diagnostics) {
  if (!diagnostics.length) return;
  const host = { getCanonicalFileName: (f) => f, getCurrentDirectory: () => root, getNewLine: () => ts.sys.newLine };
  const print = process.stdout.isTTY ? ts.formatDiagnosticsWithColorAndContext : ts.formatDiagnostics;
  process.stdout.write(print(diagnostics, host));
  const errors = diagnostics.filter((d) => d.category === ts.DiagnosticCategory.Error).length;
  if (errors) process.stdout.write(`${ts.sys.newLine}Found ${errors} error${errors === 1 ? '' : 's'}.${ts.sys.newLine}`);
}

function fail(diagnostics) {
  report(diagnostics);
  process.exit(1);
}

/**
 * The files `tsc -p tsconfig.lib.json` would emit: that config's program, built with the check's
 * parsed source files (no file is parsed twice) and never checked, lists them.
 */
function libFiles(program, lib) {
  const host = ts.createCompilerHost(lib.options);
  const parsed = host.getSourceFile;
  host.getSourceFile = (file, ...rest) => program.getSourceFile(file) ?? parsed.call(host, file, ...rest);
  const libProgram = ts.createProgram({ rootNames: lib.fileNames, options: lib.options, host });
  return libProgram.getSourceFiles().filter((sf) => !sf.isDeclarationFile && !libProgram.isSourceFileFromExternalLibrary(sf));
}

const check = parse('tsconfig.json');
const lib = process.argv.includes('--lib-types') ? parse('tsconfig.lib.json') : undefined;
let options = check.options;
if (lib) {
  const keys = new Set([...Object.keys(check.options), ...Object.keys(lib.options)]);
  const differ = [...keys].filter((k) => !EMIT_ONLY.has(k) && JSON.stringify(check.options[k]) !== JSON.stringify(lib.options[k]));
  if (differ.length) throw new Error(`tsconfig.lib.json changes ${differ.join(', ')}: only emit options may differ from tsconfig.json`);
  options = lib.options;
}

const program = ts.createProgram({ rootNames: check.fileNames, options, configFileParsingDiagnostics: ts.getConfigFileParsingDiagnostics(check) });
// What tsc reports, in its order: syntax first, and the semantics only of a program that parses.
const diagnostics = [...program.getConfigFileParsingDiagnostics(), ...program.getSyntacticDiagnostics()];
if (!diagnostics.length) {
  diagnostics.push(...program.getOptionsDiagnostics(), ...program.getGlobalDiagnostics());
  if (!diagnostics.length) diagnostics.push(...program.getSemanticDiagnostics());
}
if (diagnostics.some((d) => d.category === ts.DiagnosticCategory.Error)) fail(diagnostics);
if (lib) {
  for (const { fileName } of libFiles(program, lib)) {
    diagnostics.push(...program.emit(program.getSourceFile(fileName), undefined, undefined, /* emitOnlyDts */ true).diagnostics);
  }
}
report(diagnostics);
if (diagnostics.some((d) => d.category === ts.DiagnosticCategory.Error)) process.exit(1);

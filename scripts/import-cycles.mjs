#!/usr/bin/env node
// Lists import cycles among src/ modules, and among its folders (a folder never imports one that
// depends on it: the layers of docs/architecture.md), type-only imports included (they tie two
// files' designs together as much as value imports do). Exit 1 when there is one. Used by a test.
import { readdirSync, readFileSync, statSync } from 'node:fs';
import path from 'node:path';

export function importGraph(root) {
  const files = [];
  const walk = (dir) => {
    for (const name of readdirSync(dir)) {
      const full = path.join(dir, name);
      if (statSync(full).isDirectory()) {
        if (name !== 'generated') walk(full);
      } else if (/\.tsx?$/.test(name)) files.push(full);
    }
  };
  walk(root);
  // Specifiers as the server writes them ('./x.js') and as the console does ('./x', a .ts or .tsx).
  const resolve = (file, spec) => {
    const base = path.resolve(path.dirname(file), spec.replace(/\.js$/, ''));
    return [`${base}.ts`, `${base}.tsx`].find((candidate) => files.includes(candidate));
  };
  const graph = new Map();
  for (const file of files) {
    const text = readFileSync(file, 'utf8');
    const deps = [...text.matchAll(/^\s*(?:import|export)\s[^;]*?from\s+'(\.{1,2}\/[^']+)'/gms)]
      .map((m) => resolve(file, m[1]))
      .filter((dep) => dep !== undefined);
    graph.set(file, deps);
  }
  return graph;
}

export function cycles(graph) {
  const found = new Set();
  const state = new Map();
  const stack = [];
  const visit = (node) => {
    state.set(node, 'open');
    stack.push(node);
    for (const dep of graph.get(node) ?? []) {
      if (state.get(dep) === 'open')
        found.add(
          stack
            .slice(stack.indexOf(dep))
            .map((f) => path.relative(process.cwd(), f))
            .join(' → '),
        );
      else if (!state.has(dep)) visit(dep);
    }
    stack.pop();
    state.set(node, 'done');
  };
  for (const node of graph.keys()) if (!state.has(node)) visit(node);
  return [...found];
}

/** A file's folder: its first directory under root ('.' for the composition root's own files). */
function folderOf(root, file) {
  const parts = path.relative(root, file).split(path.sep);
  return parts.length > 1 ? parts[0] : '.';
}

/**
 * Cycles among folders, each named by its folders and, for every step, one import that makes it
 * ("audit → auth (audit/audit.service.ts imports auth/access.ts) → audit (…)").
 */
export function folderCycles(graph, root) {
  const folders = new Map(); // folder → (folder it imports → one file import that does)
  for (const [file, deps] of graph) {
    const from = folderOf(root, file);
    if (!folders.has(from)) folders.set(from, new Map());
    for (const dep of deps) {
      const to = folderOf(root, dep);
      if (to !== from && !folders.get(from).has(to))
        folders.get(from).set(to, `${path.relative(root, file)} imports ${path.relative(root, dep)}`);
    }
  }
  const found = new Set();
  const state = new Map();
  const stack = [];
  const visit = (node) => {
    state.set(node, 'open');
    stack.push(node);
    for (const dep of folders.get(node)?.keys() ?? []) {
      if (state.get(dep) === 'open') {
        const loop = [...stack.slice(stack.indexOf(dep)), dep];
        found.add(loop.map((f, i) => (i === 0 ? f : `→ ${f} (${folders.get(loop[i - 1]).get(f)})`)).join(' '));
      } else if (!state.has(dep)) visit(dep);
    }
    stack.pop();
    state.set(node, 'done');
  };
  for (const node of folders.keys()) if (!state.has(node)) visit(node);
  return [...found];
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const root = path.resolve('src');
  const found = [...cycles(importGraph(root)), ...folderCycles(importGraph(root), root)];
  for (const c of found) console.log(c);
  process.exit(found.length ? 1 : 0);
}

#!/usr/bin/env node
// Lists import cycles among src/ modules, type-only imports included (they tie two files'
// designs together as much as value imports do). Exit 1 when there is one. Used by a test.
import { readdirSync, readFileSync, statSync } from 'node:fs';
import path from 'node:path';

export function importGraph(root) {
  const files = [];
  const walk = (dir) => {
    for (const name of readdirSync(dir)) {
      const full = path.join(dir, name);
      if (statSync(full).isDirectory()) {
        if (name !== 'generated') walk(full);
      } else if (name.endsWith('.ts')) files.push(full);
    }
  };
  walk(root);
  const graph = new Map();
  for (const file of files) {
    const text = readFileSync(file, 'utf8');
    const deps = [...text.matchAll(/^\s*(?:import|export)\s[^;]*?from\s+'(\.{1,2}\/[^']+)'/gms)]
      .map((m) => path.resolve(path.dirname(file), m[1].replace(/\.js$/, '.ts')))
      .filter((dep) => files.includes(dep));
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
      if (state.get(dep) === 'open') found.add(stack.slice(stack.indexOf(dep)).map((f) => path.relative(process.cwd(), f)).join(' → '));
      else if (!state.has(dep)) visit(dep);
    }
    stack.pop();
    state.set(node, 'done');
  };
  for (const node of graph.keys()) if (!state.has(node)) visit(node);
  return [...found];
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const found = cycles(importGraph(path.resolve('src')));
  for (const c of found) console.log(c);
  process.exit(found.length ? 1 : 0);
}

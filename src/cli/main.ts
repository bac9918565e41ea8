#!/usr/bin/env node
// The `webgpu-tp` command: generate, synth and bench, each driving headless Chromium.
console.log('webgpu-tp');

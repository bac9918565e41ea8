// Harness entry points for the kernels area (filled in by that area).
export {};

// Harness entry points for the collective area (filled in by that area).
export {};

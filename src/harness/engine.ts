// Harness entry points for the engine area (filled in by that area).
export {};

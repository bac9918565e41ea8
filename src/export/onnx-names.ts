/** The ONNX export's input and output names (src/export/onnx.ts), apart so that a page can feed the graph without the protobuf schema. */
export const onnxNames = {
  inputIds: 'input_ids',
  positionIds: 'position_ids',
  logits: 'logits',
  pastKey: (l: number) => `past_key_values.${l}.key`,
  pastValue: (l: number) => `past_key_values.${l}.value`,
  presentKey: (l: number) => `present.${l}.key`,
  presentValue: (l: number) => `present.${l}.value`,
} as const;

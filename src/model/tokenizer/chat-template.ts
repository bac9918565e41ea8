/**
 * A chat template (Jinja, as transformers renders it) through `@huggingface/jinja`: the one a
 * `tokenizer_config.json` or a GGUF's `tokenizer.chat_template` holds, with the tokenizer's
 * BOS and EOS texts as `bos_token` and `eos_token`.
 */
import { Template } from '@huggingface/jinja';
import { TokenizerFormatError } from '../../errors.js';

/** One chat message, in the OpenAI shape. */
export interface ChatMessage {
  role: 'system' | 'user' | 'assistant' | 'tool' | (string & {});
  content: string;
}

type Json = Record<string, unknown>;

export class ChatTemplate {
  private constructor(private readonly template: Template, private readonly vars: Json) {}

  /**
   * The template in `source` (a string, or transformers' list of named templates, whose
   * `default` is taken); undefined without one. `where` names it in a parse error.
   */
  static from(source: unknown, tokens: { bos?: string; eos?: string }, where: string): ChatTemplate | undefined {
    const tpl = Array.isArray(source) ? (source as Json[]).find((t) => t.name === 'default')?.template : source;
    if (typeof tpl !== 'string') return undefined;
    try {
      return new ChatTemplate(new Template(tpl), { bos_token: tokens.bos ?? '', eos_token: tokens.eos ?? '' });
    } catch (e) {
      throw new TokenizerFormatError(`${where} does not parse: ${(e as Error).message}`);
    }
  }

  /**
   * The chat as the model was trained to see it, ending with the assistant's turn opened
   * (`add_generation_prompt`). The rendered text carries its own BOS where the template puts one.
   */
  render(messages: readonly ChatMessage[], extra: Json = {}): string {
    return this.template.render({ ...this.vars, add_generation_prompt: true, ...extra, messages });
  }
}

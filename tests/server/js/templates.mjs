// Chat templates the server tests run a server with, in place of the synth
// model's own.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';

// ChatML with Qwen's tool tags and a think block the prompt opens (as Qwen3.5's does).
const qwenTemplate = `{%- if tools %}<|im_start|>system
<tools>{% for tool in tools %}
{{ tool | tojson }}{% endfor %}
</tools>
Call functions as <tool_call>
{"name": <function-name>, "arguments": <args-json-object>}
</tool_call><|im_end|>
{% endif %}
{%- for message in messages %}<|im_start|>{{ message.role }}
{{ message.content }}{% for tc in message.tool_calls or [] %}
<tool_call>
{"name": "{{ tc.function.name }}", "arguments": {{ tc.function.arguments | tojson }}}
</tool_call>{% endfor %}<|im_end|>
{% endfor %}
{%- if add_generation_prompt %}<|im_start|>assistant
{% if enable_thinking is defined and enable_thinking is false %}<think>

</think>

{% else %}<think>
{% endif %}{% endif %}`;

// The server's arguments that make it use qwenTemplate.
export function withQwenTemplate() {
  const file = path.join(fs.mkdtempSync(path.join(os.tmpdir(), 'anelm-tools-')), 'qwen.jinja');
  fs.writeFileSync(file, qwenTemplate);
  return ['--template', file];
}

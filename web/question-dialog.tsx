// The agent's questions to a person (PROTOCOL.md §2): a clarify, one question or a batch, or an
// approval, each a dialog named by its question.
import { useState } from 'preact/hooks';
import type { ServerRequest } from './rpc.js';

interface Question {
  id: string;
  question: string;
  choices?: string[];
}

/** A clarify (one question, or a batch asked in order) or an approval, as a dialog named by its question. */
export function QuestionDialog({ request, onAnswer }: { request: ServerRequest; onAnswer(result: unknown): void }) {
  const [answers, setAnswers] = useState<Record<string, string>>({});
  const [text, setText] = useState('');
  const p = request.params;
  if (request.method === 'approval.request') {
    const question = String(p['question']);
    return (
      <div role="dialog" aria-label={question} class="dialog">
        <p>Approve {question}?</p>
        <button type="button" onClick={() => onAnswer({ approved: true })}>Approve</button>
        <button type="button" onClick={() => onAnswer({ approved: false })}>Deny</button>
      </div>
    );
  }
  const batch = Array.isArray(p['questions']) ? (p['questions'] as Question[]) : null;
  const asked: Question = batch ? batch[Object.keys(answers).length]! : { id: '', question: String(p['question']), ...(Array.isArray(p['choices']) ? { choices: p['choices'] as string[] } : {}) };
  const give = (answer: string): void => {
    setText('');
    if (batch === null) return onAnswer({ answer });
    const next = { ...answers, [asked.id]: answer };
    if (Object.keys(next).length === batch.length) onAnswer({ answers: next });
    else setAnswers(next);
  };
  return (
    <div role="dialog" aria-label={asked.question} class="dialog">
      <p>{asked.question}</p>
      {(asked.choices ?? []).map((choice) => (
        <button type="button" key={choice} onClick={() => give(choice)}>
          {choice}
        </button>
      ))}
      <input aria-label="Answer" value={text} onInput={(e) => setText((e.target as HTMLInputElement).value)} onKeyDown={(e) => e.key === 'Enter' && give(text)} />
      <button type="button" onClick={() => give(text)}>Answer</button>
    </div>
  );
}

import type { AttributeValue } from '@aws-sdk/client-dynamodb';
import {
  addNumbers,
  bytesOf,
  compareScalars,
  equalValues,
  type Item,
  NotModelledError,
  setMembers,
  stored,
  typeOf,
  validation,
  valueSize,
} from './attribute-values';

/**
 * DynamoDB's expression languages — condition (and filter, and key condition), update, projection — as
 * the developer guide's grammar gives them: a tokenizer, a recursive-descent parser to a small syntax
 * tree (cached by expression text), and an evaluator over one item. Names (`#n`) and values (`:v`) are
 * resolved at evaluation, against the request's maps.
 *
 * Precedence, lowest first: OR, AND, NOT, then the comparisons, BETWEEN, IN and the functions.
 */

// ---- syntax ----

/** One step of a document path: an attribute name (a literal or a `#placeholder`) or a list index. */
export type PathStep = { readonly name: string } | { readonly index: number };
export type Path = readonly PathStep[];

export type Operand =
  | { readonly kind: 'path'; readonly path: Path }
  | { readonly kind: 'value'; readonly token: string }
  | { readonly kind: 'size'; readonly path: Path };

export type Comparator = '=' | '<>' | '<' | '<=' | '>' | '>=';

export type Condition =
  | { readonly kind: 'compare'; readonly op: Comparator; readonly left: Operand; readonly right: Operand }
  | { readonly kind: 'between'; readonly value: Operand; readonly low: Operand; readonly high: Operand }
  | { readonly kind: 'in'; readonly value: Operand; readonly list: readonly Operand[] }
  | { readonly kind: 'exists'; readonly path: Path; readonly negated: boolean }
  | { readonly kind: 'type'; readonly path: Path; readonly type: Operand }
  | { readonly kind: 'begins_with' | 'contains'; readonly path: Path; readonly operand: Operand }
  | { readonly kind: 'not'; readonly condition: Condition }
  | { readonly kind: 'and' | 'or'; readonly left: Condition; readonly right: Condition };

/** The right-hand side of a SET action. */
export type SetValue =
  | { readonly kind: 'operand'; readonly operand: Operand }
  | { readonly kind: 'if_not_exists'; readonly path: Path; readonly fallback: SetValue }
  | { readonly kind: 'list_append'; readonly first: SetValue; readonly second: SetValue }
  | { readonly kind: 'arithmetic'; readonly op: '+' | '-'; readonly left: SetValue; readonly right: SetValue };

export type UpdateAction =
  | { readonly kind: 'SET'; readonly path: Path; readonly value: SetValue }
  | { readonly kind: 'REMOVE'; readonly path: Path }
  | {
      readonly kind: 'ADD' | 'DELETE';
      readonly path: Path;
      readonly value: { readonly kind: 'value'; readonly token: string };
    };

/** A parsed expression and the placeholders it uses (every one must be given, every given one used). */
export interface Parsed<T> {
  readonly tree: T;
  readonly names: ReadonlySet<string>;
  readonly values: ReadonlySet<string>;
}

type Token =
  | { readonly kind: 'word'; readonly text: string }
  | { readonly kind: 'name' | 'value'; readonly text: string }
  | { readonly kind: 'number'; readonly text: string }
  | { readonly kind: 'punct'; readonly text: string }
  | { readonly kind: 'end'; readonly text: '' };

const PUNCTUATION = ['<>', '<=', '>=', '=', '<', '>', '(', ')', ',', '.', '[', ']', '+', '-'];

function tokenize(text: string, what: string): Token[] {
  const tokens: Token[] = [];
  let at = 0;
  const isWord = (c: string) => /[A-Za-z0-9_]/.test(c);
  while (at < text.length) {
    const c = text[at]!;
    if (/\s/.test(c)) {
      at += 1;
      continue;
    }
    if (c === '#' || c === ':') {
      let end = at + 1;
      while (end < text.length && isWord(text[end]!)) end += 1;
      if (end === at + 1) throw invalid(what, `Syntax error; token: "${c}", near: "${text.slice(at, at + 5)}"`);
      tokens.push({ kind: c === '#' ? 'name' : 'value', text: text.slice(at, end) });
      at = end;
      continue;
    }
    if (/[0-9]/.test(c)) {
      let end = at;
      while (end < text.length && /[0-9]/.test(text[end]!)) end += 1;
      tokens.push({ kind: 'number', text: text.slice(at, end) });
      at = end;
      continue;
    }
    if (/[A-Za-z_]/.test(c)) {
      let end = at;
      while (end < text.length && isWord(text[end]!)) end += 1;
      tokens.push({ kind: 'word', text: text.slice(at, end) });
      at = end;
      continue;
    }
    const punct = PUNCTUATION.find((p) => text.startsWith(p, at));
    if (!punct) throw invalid(what, `Invalid character encountered; character: "${c}"`);
    tokens.push({ kind: 'punct', text: punct });
    at += punct.length;
  }
  tokens.push({ kind: 'end', text: '' });
  return tokens;
}

function invalid(what: string, message: string) {
  return validation(`Invalid ${what}: ${message}`);
}

class Parser {
  #at = 0;
  readonly names = new Set<string>();
  readonly values = new Set<string>();

  constructor(
    private readonly tokens: Token[],
    private readonly what: string,
  ) {}

  get #peek(): Token {
    return this.tokens[this.#at]!;
  }

  #next(): Token {
    return this.tokens[this.#at++]!;
  }

  #isKeyword(word: string): boolean {
    const token = this.#peek;
    return token.kind === 'word' && token.text.toUpperCase() === word;
  }

  #isPunct(text: string): boolean {
    const token = this.#peek;
    return token.kind === 'punct' && token.text === text;
  }

  #expectPunct(text: string): void {
    if (!this.#isPunct(text)) throw this.#syntax();
    this.#next();
  }

  #syntax() {
    const token = this.#peek;
    return invalid(
      this.what,
      token.kind === 'end' ? 'Syntax error; token: "<EOF>"' : `Syntax error; token: "${token.text}"`,
    );
  }

  end(): void {
    if (this.#peek.kind !== 'end') throw this.#syntax();
  }

  // condition := disjunction
  condition(): Condition {
    let left = this.#conjunction();
    while (this.#isKeyword('OR')) {
      this.#next();
      left = { kind: 'or', left, right: this.#conjunction() };
    }
    return left;
  }

  #conjunction(): Condition {
    let left = this.#negation();
    while (this.#isKeyword('AND')) {
      this.#next();
      left = { kind: 'and', left, right: this.#negation() };
    }
    return left;
  }

  #negation(): Condition {
    if (this.#isKeyword('NOT')) {
      this.#next();
      return { kind: 'not', condition: this.#negation() };
    }
    return this.#predicate();
  }

  #predicate(): Condition {
    if (this.#isPunct('(')) {
      this.#next();
      const inner = this.condition();
      this.#expectPunct(')');
      return inner;
    }
    const token = this.#peek;
    const following = this.tokens[this.#at + 1];
    if (token.kind === 'word' && following?.kind === 'punct' && following.text === '(') {
      const fn = token.text;
      if (fn !== 'size') return this.#function(fn);
    }
    const left = this.operand();
    if (this.#isKeyword('BETWEEN')) {
      this.#next();
      const low = this.operand();
      if (!this.#isKeyword('AND')) throw this.#syntax();
      this.#next();
      return { kind: 'between', value: left, low, high: this.operand() };
    }
    if (this.#isKeyword('IN')) {
      this.#next();
      this.#expectPunct('(');
      const list = [this.operand()];
      while (this.#isPunct(',')) {
        this.#next();
        list.push(this.operand());
      }
      this.#expectPunct(')');
      return { kind: 'in', value: left, list };
    }
    const op = this.#peek;
    if (op.kind !== 'punct' || !['=', '<>', '<', '<=', '>', '>='].includes(op.text)) throw this.#syntax();
    this.#next();
    return { kind: 'compare', op: op.text as Comparator, left, right: this.operand() };
  }

  #function(fn: string): Condition {
    this.#next();
    this.#expectPunct('(');
    let condition: Condition;
    switch (fn) {
      case 'attribute_exists':
      case 'attribute_not_exists':
        condition = { kind: 'exists', path: this.path(), negated: fn === 'attribute_not_exists' };
        break;
      case 'attribute_type': {
        const path = this.path();
        this.#expectPunct(',');
        condition = { kind: 'type', path, type: this.operand() };
        break;
      }
      case 'begins_with':
      case 'contains': {
        const path = this.path();
        this.#expectPunct(',');
        condition = { kind: fn, path, operand: this.operand() };
        break;
      }
      default:
        throw invalid(this.what, `Invalid function name; function: ${fn}`);
    }
    this.#expectPunct(')');
    return condition;
  }

  operand(): Operand {
    const token = this.#peek;
    if (token.kind === 'value') {
      this.#next();
      this.values.add(token.text);
      return { kind: 'value', token: token.text };
    }
    if (token.kind === 'word' && token.text === 'size' && this.tokens[this.#at + 1]?.text === '(') {
      this.#next();
      this.#expectPunct('(');
      const path = this.path();
      this.#expectPunct(')');
      return { kind: 'size', path };
    }
    return { kind: 'path', path: this.path() };
  }

  path(): Path {
    const steps: PathStep[] = [this.#pathName()];
    for (;;) {
      if (this.#isPunct('.')) {
        this.#next();
        steps.push(this.#pathName());
      } else if (this.#isPunct('[')) {
        this.#next();
        const index = this.#next();
        if (index.kind !== 'number') throw this.#syntax();
        this.#expectPunct(']');
        steps.push({ index: Number(index.text) });
      } else return steps;
    }
  }

  #pathName(): PathStep {
    const token = this.#next();
    if (token.kind === 'name') {
      this.names.add(token.text);
      return { name: token.text };
    }
    if (token.kind === 'word') return { name: token.text };
    this.#at -= 1;
    throw this.#syntax();
  }

  // update := clause+ ; clause := SET a, a… | REMOVE p, p… | ADD p v, … | DELETE p v, …
  update(): UpdateAction[] {
    const actions: UpdateAction[] = [];
    const seen = new Set<string>();
    while (this.#peek.kind !== 'end') {
      const clause = this.#next();
      const keyword = clause.kind === 'word' ? clause.text.toUpperCase() : '';
      if (!['SET', 'REMOVE', 'ADD', 'DELETE'].includes(keyword)) {
        this.#at -= 1;
        throw this.#syntax();
      }
      if (seen.has(keyword))
        throw invalid(this.what, `The "${keyword}" section can only be used once in an update expression;`);
      seen.add(keyword);
      for (;;) {
        const path = this.path();
        if (keyword === 'SET') {
          this.#expectPunct('=');
          actions.push({ kind: 'SET', path, value: this.#setValue() });
        } else if (keyword === 'REMOVE') {
          actions.push({ kind: 'REMOVE', path });
        } else {
          const value = this.operand();
          if (value.kind !== 'value') throw this.#syntax();
          actions.push({ kind: keyword as 'ADD' | 'DELETE', path, value });
        }
        if (!this.#isPunct(',')) break;
        this.#next();
      }
    }
    if (actions.length === 0) throw this.#syntax();
    return actions;
  }

  #setValue(): SetValue {
    const left = this.#setOperand();
    if (this.#isPunct('+') || this.#isPunct('-')) {
      const op = this.#next().text as '+' | '-';
      return { kind: 'arithmetic', op, left, right: this.#setOperand() };
    }
    return left;
  }

  #setOperand(): SetValue {
    const token = this.#peek;
    if (token.kind === 'word' && this.tokens[this.#at + 1]?.text === '(') {
      const fn = token.text;
      this.#next();
      this.#expectPunct('(');
      let value: SetValue;
      if (fn === 'if_not_exists') {
        const path = this.path();
        this.#expectPunct(',');
        value = { kind: 'if_not_exists', path, fallback: this.#setValue() };
      } else if (fn === 'list_append') {
        const first = this.#setValue();
        this.#expectPunct(',');
        value = { kind: 'list_append', first, second: this.#setValue() };
      } else throw invalid(this.what, `Invalid function name; function: ${fn}`);
      this.#expectPunct(')');
      return value;
    }
    return { kind: 'operand', operand: this.operand() };
  }

  // projection := path, path…
  projection(): Path[] {
    const paths = [this.path()];
    while (this.#isPunct(',')) {
      this.#next();
      paths.push(this.path());
    }
    return paths;
  }
}

const cache = new Map<string, Parsed<unknown>>();

function parse<T>(kind: string, what: string, text: string, rule: (parser: Parser) => T): Parsed<T> {
  const cacheKey = `${kind}\u0000${text}`;
  const hit = cache.get(cacheKey);
  if (hit) return hit as Parsed<T>;
  if (text.trim() === '') throw invalid(what, 'The expression can not be empty;');
  const parser = new Parser(tokenize(text, what), what);
  const tree = rule(parser);
  parser.end();
  const parsed = { tree, names: parser.names, values: parser.values };
  cache.set(cacheKey, parsed);
  return parsed;
}

export const parseCondition = (text: string, what = 'ConditionExpression') =>
  parse('condition', what, text, (parser) => parser.condition());
export const parseUpdate = (text: string) => parse('update', 'UpdateExpression', text, (parser) => parser.update());
export const parseProjection = (text: string) =>
  parse('projection', 'ProjectionExpression', text, (parser) => parser.projection());

// ---- evaluation ----

/** The request's `ExpressionAttributeNames` and `ExpressionAttributeValues`. */
export interface Placeholders {
  readonly names: Readonly<Record<string, string>>;
  readonly values: Readonly<Record<string, AttributeValue>>;
}

/** A path's attribute names, placeholders replaced. */
export function resolvePath(path: Path, { names }: Placeholders): Array<string | number> {
  return path.map((step) => {
    if ('index' in step) return step.index;
    if (!step.name.startsWith('#')) return step.name;
    const name = names[step.name];
    if (name === undefined) {
      throw validation(
        `An expression attribute name used in the document path is not defined; attribute name: ${step.name}`,
      );
    }
    return name;
  });
}

/** The value at `path` in `item`, or undefined. */
export function valueAt(item: Item | undefined, path: Path, placeholders: Placeholders): AttributeValue | undefined {
  if (!item) return undefined;
  const [first, ...rest] = resolvePath(path, placeholders);
  let value: AttributeValue | undefined = item[first as string];
  for (const step of rest) {
    if (value === undefined) return undefined;
    if (typeof step === 'number') value = value.L?.[step];
    else value = value.M?.[step];
  }
  return value;
}

function placeholderValue(token: string, { values }: Placeholders): AttributeValue {
  const value = values[token];
  if (value === undefined) {
    throw validation(`An expression attribute value used in expression is not defined; attribute value: ${token}`);
  }
  return value;
}

function operandValue(operand: Operand, item: Item | undefined, placeholders: Placeholders) {
  switch (operand.kind) {
    case 'value':
      return placeholderValue(operand.token, placeholders);
    case 'path':
      return valueAt(item, operand.path, placeholders);
    case 'size': {
      const value = valueAt(item, operand.path, placeholders);
      if (value === undefined) return undefined;
      const type = typeOf(value);
      if (type === 'S' || type === 'B') return { N: String(valueSize(value)) };
      if (type === 'SS' || type === 'NS' || type === 'BS') return { N: String(setMembers(value).length) };
      if (type === 'L') return { N: String(value.L!.length) };
      if (type === 'M') return { N: String(Object.keys(value.M!).length) };
      return undefined;
    }
  }
}

/** Whether `item` (undefined: no item) meets the condition. */
export function evaluate(condition: Condition, item: Item | undefined, placeholders: Placeholders): boolean {
  switch (condition.kind) {
    case 'and':
      return evaluate(condition.left, item, placeholders) && evaluate(condition.right, item, placeholders);
    case 'or':
      return evaluate(condition.left, item, placeholders) || evaluate(condition.right, item, placeholders);
    case 'not':
      return !evaluate(condition.condition, item, placeholders);
    case 'exists':
      return (valueAt(item, condition.path, placeholders) !== undefined) !== condition.negated;
    case 'type': {
      const value = valueAt(item, condition.path, placeholders);
      const type = operandValue(condition.type, item, placeholders);
      return value !== undefined && type?.S !== undefined && typeOf(value) === type.S;
    }
    case 'begins_with': {
      const value = valueAt(item, condition.path, placeholders);
      const prefix = operandValue(condition.operand, item, placeholders);
      if (value?.S !== undefined && prefix?.S !== undefined) return value.S.startsWith(prefix.S);
      if (value?.B !== undefined && prefix?.B !== undefined) {
        const prefixBytes = bytesOf(prefix.B);
        return bytesOf(value.B).subarray(0, prefixBytes.length).equals(prefixBytes);
      }
      return false;
    }
    case 'contains': {
      const value = valueAt(item, condition.path, placeholders);
      const member = operandValue(condition.operand, item, placeholders);
      if (value === undefined || member === undefined) return false;
      if (value.S !== undefined) return member.S !== undefined && value.S.includes(member.S);
      if (value.SS || value.NS || value.BS) return setMembers(value).some((m) => equalValues(m, member));
      if (value.L) return value.L.some((element) => equalValues(element, member));
      return false;
    }
    case 'compare': {
      const left = operandValue(condition.left, item, placeholders);
      const right = operandValue(condition.right, item, placeholders);
      if (left === undefined || right === undefined) return false;
      if (condition.op === '=') return equalValues(left, right);
      if (condition.op === '<>') return !equalValues(left, right);
      const order = compareScalars(left, right);
      if (order === undefined) return false;
      return { '<': order < 0, '<=': order <= 0, '>': order > 0, '>=': order >= 0 }[condition.op];
    }
    case 'between': {
      const value = operandValue(condition.value, item, placeholders);
      const low = operandValue(condition.low, item, placeholders);
      const high = operandValue(condition.high, item, placeholders);
      if (value === undefined || low === undefined || high === undefined) return false;
      const above = compareScalars(value, low);
      const below = compareScalars(value, high);
      return above !== undefined && below !== undefined && above >= 0 && below <= 0;
    }
    case 'in': {
      const value = operandValue(condition.value, item, placeholders);
      if (value === undefined) return false;
      return condition.list.some((candidate) => {
        const other = operandValue(candidate, item, placeholders);
        return other !== undefined && equalValues(value, other);
      });
    }
  }
}

/** A top-level attribute name: nested paths are read, never written, by the code the model serves. */
function topLevel(path: Path, placeholders: Placeholders, what: string): string {
  const [name, ...rest] = resolvePath(path, placeholders);
  if (rest.length > 0) throw new NotModelledError(`a nested document path in ${what}`);
  return name as string;
}

function setValue(value: SetValue, item: Item | undefined, placeholders: Placeholders): AttributeValue {
  switch (value.kind) {
    case 'operand': {
      const result = operandValue(value.operand, item, placeholders);
      if (result === undefined) {
        throw validation('The provided expression refers to an attribute that does not exist in the item');
      }
      return result;
    }
    case 'if_not_exists':
      return valueAt(item, value.path, placeholders) ?? setValue(value.fallback, item, placeholders);
    case 'list_append': {
      const first = setValue(value.first, item, placeholders);
      const second = setValue(value.second, item, placeholders);
      if (!first.L || !second.L)
        throw validation(
          'Invalid UpdateExpression: Incorrect operand type for operator or function; operator or function: list_append',
        );
      return { L: [...first.L, ...second.L] };
    }
    case 'arithmetic': {
      const left = setValue(value.left, item, placeholders);
      const right = setValue(value.right, item, placeholders);
      if (left.N === undefined || right.N === undefined) {
        throw validation(
          `Invalid UpdateExpression: Incorrect operand type for operator or function; operator: ${value.op}`,
        );
      }
      return { N: addNumbers(left.N, right.N, value.op === '+' ? 1 : -1) };
    }
  }
}

/**
 * The item after the update: every right-hand side read from the item as it was (DynamoDB evaluates
 * them all before it writes any), then the actions applied in order.
 */
export function applyUpdate(
  actions: readonly UpdateAction[],
  item: Item | undefined,
  placeholders: Placeholders,
  keyNames: readonly string[],
): Item {
  const result: Item = { ...item };
  const touched = new Set<string>();
  const writes: Array<() => void> = [];
  for (const action of actions) {
    const name = topLevel(action.path, placeholders, 'an UpdateExpression');
    if (touched.has(name)) {
      throw validation(
        `Invalid UpdateExpression: Two document paths overlap with each other; must remove or rewrite one of these paths; path one: [${name}], path two: [${name}]`,
      );
    }
    touched.add(name);
    if (keyNames.includes(name)) {
      throw validation(
        `One or more parameter values were invalid: Cannot update attribute ${name}. This attribute is part of the key`,
      );
    }
    switch (action.kind) {
      case 'SET': {
        const value = stored(setValue(action.value, item, placeholders));
        writes.push(() => {
          result[name] = value;
        });
        break;
      }
      case 'REMOVE':
        writes.push(() => {
          delete result[name];
        });
        break;
      case 'ADD': {
        const operand = placeholderValue(action.value.token, placeholders);
        const current = item?.[name];
        let next: AttributeValue;
        if (operand.N !== undefined) {
          if (current !== undefined && current.N === undefined)
            throw validation('An operand in the update expression has an incorrect data type');
          next = { N: addNumbers(current?.N ?? '0', operand.N) };
        } else if (operand.SS || operand.NS || operand.BS) {
          const type = typeOf(operand);
          if (current !== undefined && typeOf(current) !== type)
            throw validation('An operand in the update expression has an incorrect data type');
          const members = current ? setMembers(current) : [];
          for (const member of setMembers(operand))
            if (!members.some((m) => equalValues(m, member))) members.push(member);
          next = toSet(type, members);
        } else
          throw validation('Invalid UpdateExpression: Incorrect operand type for operator or function; operator: ADD');
        writes.push(() => {
          result[name] = stored(next);
        });
        break;
      }
      case 'DELETE': {
        const operand = placeholderValue(action.value.token, placeholders);
        const current = item?.[name];
        if (!(operand.SS || operand.NS || operand.BS))
          throw validation(
            'Invalid UpdateExpression: Incorrect operand type for operator or function; operator: DELETE',
          );
        if (current === undefined) break;
        if (typeOf(current) !== typeOf(operand))
          throw validation('An operand in the update expression has an incorrect data type');
        const left = setMembers(current).filter((m) => !setMembers(operand).some((o) => equalValues(m, o)));
        writes.push(() => {
          if (left.length === 0) delete result[name];
          else result[name] = toSet(typeOf(operand), left);
        });
        break;
      }
    }
  }
  for (const write of writes) write();
  return result;
}

function toSet(type: string, members: AttributeValue[]): AttributeValue {
  if (type === 'SS') return { SS: members.map((m) => m.S!) };
  if (type === 'NS') return { NS: members.map((m) => m.N!) };
  return { BS: members.map((m) => m.B!) };
}

/** The item with only the projected top-level attributes. */
export function project(item: Item, paths: readonly Path[], placeholders: Placeholders): Item {
  const projected: Item = {};
  for (const path of paths) {
    const name = topLevel(path, placeholders, 'a ProjectionExpression');
    if (item[name] !== undefined) projected[name] = item[name];
  }
  return projected;
}

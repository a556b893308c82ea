import { test, describe } from 'node:test';
import assert from 'node:assert/strict';

test('adds two numbers', () => {
  assert.equal(1 + 1, 2);
});

test('subtracts with a # hash and spaces', () => {
  assert.equal(3 - 1, 1);
});

describe('parser', () => {
  test('parses empty input', () => {});
  test('rejects bad input', () => {
    throw new Error('unexpected token');
  });
});

test('skipped one', { skip: true }, () => {});

import t from 'tap';
import { countSegments } from '../../../src/channels/sms/segments.js';
import { isE164 } from '../../../src/channels/provider.js';

t.test('GSM-7 and UCS-2 segment counts', async (t) => {
  const cases: [string, string, number, number][] = [
    ['empty', '', 1, 0],
    ['short ascii', 'Your code is 123456', 1, 19],
    ['160 GSM fits one', 'a'.repeat(160), 1, 160],
    ['161 GSM needs two', 'a'.repeat(161), 2, 161],
    ['306 GSM is two', 'a'.repeat(306), 2, 306],
    ['307 GSM is three', 'a'.repeat(307), 3, 307],
    ['extension chars cost two', '€'.repeat(80), 1, 160],
    ['81 euro signs: two parts', '€'.repeat(81), 2, 162],
    ['escape pair not split', 'a'.repeat(152) + '€' + 'a'.repeat(152), 3, 306],
    ['accented GSM letters', 'Hélène à Göteborg ñ', 1, 19],
  ];
  for (const [name, body, segments, units] of cases) t.same(countSegments(body), { encoding: 'GSM-7', segments, units }, name);
  const ucs: [string, string, number, number][] = [
    ['one emoji', 'hi 👋', 1, 5],
    ['70 UCS-2 fits one', 'ж'.repeat(70), 1, 70],
    ['71 UCS-2 needs two', 'ж'.repeat(71), 2, 71],
    ['134 UCS-2 is two', 'ж'.repeat(134), 2, 134],
    ['135 UCS-2 is three', 'ж'.repeat(135), 3, 135],
    ['surrogate pair not split', 'ж'.repeat(66) + '😀' + 'ж'.repeat(5), 2, 73],
    ['one non-GSM char switches all', 'a'.repeat(100) + 'ç', 2, 101],
  ];
  for (const [name, body, segments, units] of ucs) t.same(countSegments(body), { encoding: 'UCS-2', segments, units }, name);
});

t.test('E.164', async (t) => {
  for (const ok of ['+14155550100', '+447700900123', '+4915123456789', '+1234567']) t.ok(isE164(ok), ok);
  for (const bad of ['14155550100', '+0123456789', '+1 415 555 0100', '+1234567890123456', '+', '', '+12345a7890'])
    t.notOk(isE164(bad), bad);
});

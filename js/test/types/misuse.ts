// A use the declarations must refuse (js/test/types.test.mjs): a URL is a string, a report's ok a boolean.
import * as mpk from '../../src/index.js';

async function wrong(): Promise<void> {
  const n: number = await mpk.cleanModelUrl('https://h/m');
  const s: string = (await mpk.check({})).ok;
  console.log(n, s);
}
void wrong;

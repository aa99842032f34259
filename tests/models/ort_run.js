// ort_run.js [--level disabled|basic|all] MODEL OUTDIR NAME=FILE.npy...: runs
// onnxruntime's CPU build (the npm package onnxruntime-node, a setup
// dependency) on the named inputs, read from .npy files (float32, float16, float64,
// int64, int32, uint8, bool), and writes each output as OUTDIR/<index>.npy
// (in the model's output order: names can be any string); prints the
// outputs' names, one a line. One thread; graph optimizations as --level
// says (default basic): two levels sum in two orders, which measures how
// much a model's outputs move with the order alone.
const fs = require('fs');
const path = require('path');
const ort = require(path.join(__dirname, '..', '..', '.deps', 'node_modules', 'onnxruntime-node'));

const kinds = {
  '<f4': ['float32', Float32Array], '<f2': ['float16', Uint16Array], '<f8': ['float64', Float64Array],
  '<i8': ['int64', BigInt64Array],
  '<i4': ['int32', Int32Array], '|u1': ['uint8', Uint8Array], '|b1': ['bool', Uint8Array],
};

function readNpy(file) {
  const b = fs.readFileSync(file);
  const major = b[6], hlen = major === 1 ? b.readUInt16LE(8) : b.readUInt32LE(8), start = major === 1 ? 10 : 12;
  const hdr = b.toString('latin1', start, start + hlen);
  const descr = /'descr': *'([^']*)'/.exec(hdr)[1];
  const shape = /'shape': *\(([^)]*)\)/.exec(hdr)[1].split(',').filter((s) => s.trim()).map((s) => parseInt(s, 10));
  const [type, Array_] = kinds[descr] || (() => { throw new Error(`${file}: dtype ${descr}`); })();
  const data = b.subarray(start + hlen);
  const copy = new Uint8Array(data.length);
  copy.set(data);
  const values = new Array_(copy.buffer, 0, data.length / Array_.BYTES_PER_ELEMENT);
  return new ort.Tensor(type, type === 'bool' ? Uint8Array.from(values) : values, shape);
}

function writeNpy(file, t) {
  const descr = { float32: '<f4', float16: '<f2', float64: '<f8', int64: '<i8', int32: '<i4', uint8: '|u1', bool: '|b1' }[t.type];
  if (!descr) throw new Error(`an output of type ${t.type}`);
  const dims = t.dims.length === 1 ? `${t.dims[0]},` : t.dims.join(', ');
  let hdr = `{'descr': '${descr}', 'fortran_order': False, 'shape': (${dims}), }`;
  while ((10 + hdr.length + 1) % 64) hdr += ' ';
  hdr += '\n';
  const head = Buffer.alloc(10);
  head.write('\x93NUMPY', 0, 'latin1');
  head[6] = 1;
  head.writeUInt16LE(hdr.length, 8);
  const data = t.type === 'bool' ? Buffer.from(Uint8Array.from(t.data, (v) => (v ? 1 : 0)))
    : Buffer.from(t.data.buffer, t.data.byteOffset, t.data.byteLength);
  fs.writeFileSync(file, Buffer.concat([head, Buffer.from(hdr, 'latin1'), data]));
}

async function main() {
  let args = process.argv.slice(2), level = 'basic';
  if (args[0] === '--level') {
    level = args[1];
    args = args.slice(2);
  }
  const [model, outdir, ...named] = args;
  const session = await ort.InferenceSession.create(model, {
    intraOpNumThreads: 1, interOpNumThreads: 1, graphOptimizationLevel: level });
  const feeds = {};
  for (const arg of named) {
    const eq = arg.indexOf('=');
    feeds[arg.slice(0, eq)] = readNpy(arg.slice(eq + 1));
  }
  const out = await session.run(feeds);
  fs.mkdirSync(outdir, { recursive: true });
  session.outputNames.forEach((name, i) => {
    writeNpy(path.join(outdir, `${i}.npy`), out[name]);
    console.log(name);
  });
}

main().catch((e) => { console.error(`ort_run: ${e.message}`); process.exit(1); });

// ort_bench.js MODEL INPUT_NAME SHAPE THREADS WARMUP REPEAT: times onnxruntime's CPU
// build (the npm package onnxruntime-node) on random input; prints {"median_ms", "times_ms"}.
const path = require('path');
const ort = require(path.join(__dirname, '..', '..', '.deps', 'node_modules', 'onnxruntime-node'));
const [model, inputName, shapeText, threads, warmup, repeat] = process.argv.slice(2);
(async () => {
  const session = await ort.InferenceSession.create(model, {
    intraOpNumThreads: Number(threads), interOpNumThreads: 1, executionMode: 'sequential',
    graphOptimizationLevel: 'all'});
  const shape = shapeText.split(',').map(Number);
  const data = Float32Array.from({length: shape.reduce((a, b) => a * b, 1)}, () => Math.random() * 2 - 1);
  const feeds = {[inputName]: new ort.Tensor('float32', data, shape)};
  for (let i = 0; i < Number(warmup); i++) await session.run(feeds);
  const times = [];
  for (let i = 0; i < Number(repeat); i++) {
    const t0 = process.hrtime.bigint();
    await session.run(feeds);
    times.push(Number(process.hrtime.bigint() - t0) / 1e6);
  }
  const sorted = [...times].sort((a, b) => a - b);
  console.log(JSON.stringify({median_ms: sorted[Math.floor(sorted.length / 2)], times_ms: times}));
})();

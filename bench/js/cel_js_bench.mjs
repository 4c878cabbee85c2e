// Peer benchmark: the selectors of bench/micro/cel_bench.cc evaluated by @marcbachmann/cel-js
// against the same device, compiled once. Prints one JSON object per line:
//   {"name": "...", "eval_ns": N, "compile_ns": N, "result": true}
// The Kubernetes quantity and semver functions the selectors use are registered as custom
// types and functions (cel-js has no Kubernetes libraries); quantities compare exactly in
// nano units (BigInt), versions by major/minor/patch.
import {Environment} from '@marcbachmann/cel-js'

class Quantity {
  constructor(nanos) {
    this.nanos = nanos
  }

  static parse(text) {
    const m = /^([+-]?[0-9]+(?:\.[0-9]+)?)([A-Za-z]*)$/.exec(text)
    if (!m) throw new Error(`quantity: cannot parse ${text}`)
    const suffixes = {
      '': 1n, k: 10n ** 3n, M: 10n ** 6n, G: 10n ** 9n, T: 10n ** 12n,
      Ki: 1n << 10n, Mi: 1n << 20n, Gi: 1n << 30n, Ti: 1n << 40n
    }
    const mult = suffixes[m[2]]
    if (mult === undefined) throw new Error(`quantity: unknown suffix ${m[2]}`)
    const [whole, frac = ''] = m[1].split('.')
    const scale = 10n ** BigInt(frac.length)
    const value = BigInt(whole + frac) * mult * 1000000000n / scale
    return new Quantity(value)
  }

  compareTo(other) {
    return this.nanos < other.nanos ? -1n : this.nanos > other.nanos ? 1n : 0n
  }
}

class Semver {
  constructor(text) {
    const [major, minor, patch] = text.split('.').map((p) => BigInt(p))
    this.parts = [major, minor, patch]
  }

  compareTo(other) {
    for (let i = 0; i < 3; i++) {
      if (this.parts[i] !== other.parts[i]) return this.parts[i] < other.parts[i] ? -1n : 1n
    }
    return 0n
  }
}

const env = new Environment({unlistedVariablesAreDyn: true})
  .registerType('Quantity', Quantity)
  .registerType('Semver', Semver)
  .registerVariable('device', 'map')
  .registerFunction('quantity(string): Quantity', (s) => Quantity.parse(s))
  .registerFunction('semver(string): Semver', (s) => new Semver(s))
  .registerFunction({
    name: 'compareTo', receiverType: 'Quantity', returnType: 'int',
    params: [{name: 'other', type: 'Quantity'}], handler: (a, b) => a.compareTo(b)
  })
  .registerFunction({
    name: 'isGreaterThan', receiverType: 'Semver', returnType: 'bool',
    params: [{name: 'other', type: 'Semver'}], handler: (a, b) => a.compareTo(b) === 1n
  })

const gpu = new Map([
  ['productName', 'NVIDIA H100 80GB HBM3'],
  ['uuid', 'GPU-4d3c1f0e-8a1b-4c2d-9e3f-5a6b7c8d9e0f'],
  ['index', 3n],
  ['architecture', 'Hopper'],
  ['brand', 'Nvidia'],
  ['type', 'gpu'],
  ['driverVersion', new Semver('550.54.15')],
  ['cudaComputeCapability', new Semver('9.0.0')]
])
const device = new Map([
  ['driver', 'gpu.nvidia.com'],
  ['attributes', new Map([['gpu.nvidia.com', gpu]])],
  ['capacity', new Map([['gpu.nvidia.com', new Map([['memory', Quantity.parse('80Gi')]])]])],
  ['allowMultipleAllocations', false]
])
const context = {device}

// Keep in sync with bench/micro/cel_bench.cc.
const cases = [
  ['driver_eq', 'device.driver == "gpu.nvidia.com"'],
  ['attr_contains', 'device.attributes["gpu.nvidia.com"].productName.contains("H100")'],
  ['three_clause',
    'device.driver == "gpu.nvidia.com" && ' +
    'device.attributes["gpu.nvidia.com"].productName == "NVIDIA H100 80GB HBM3" && ' +
    'device.capacity["gpu.nvidia.com"].memory.compareTo(quantity("40Gi")) >= 0'],
  ['semver_cmp',
    'device.attributes["gpu.nvidia.com"].driverVersion.isGreaterThan(semver("535.0.0"))'],
  ['regex_match', 'device.attributes["gpu.nvidia.com"].productName.matches("^NVIDIA H1[0-9]{2}")'],
  ['typical',
    'device.driver == "gpu.nvidia.com" && ' +
    'device.attributes["gpu.nvidia.com"].productName.contains("H100") && ' +
    'device.attributes["gpu.nvidia.com"].index >= 2'],
  ['macro_exists', 'device.attributes["gpu.nvidia.com"].exists(k, k.startsWith("cuda"))']
]

// Runs fn until at least `minMs` of CPU time elapsed; returns CPU ns per call, the best of
// `rounds` (CPU time, like Google Benchmark's, so a loaded machine distorts it less).
function measure(fn, minMs = 300, rounds = 5) {
  let best = Infinity
  for (let r = 0; r < rounds; r++) {
    let n = 1000
    for (;;) {
      const start = process.cpuUsage()
      for (let i = 0; i < n; i++) fn()
      const used = process.cpuUsage(start)
      const elapsedNs = (used.user + used.system) * 1000
      if (elapsedNs >= minMs * 1e6) {
        best = Math.min(best, elapsedNs / n)
        break
      }
      n *= 2
    }
  }
  return best
}

for (const [name, expr] of cases) {
  let compiled
  try {
    compiled = env.parse(expr)
  } catch (e) {
    console.log(JSON.stringify({name, error: String(e.message || e)}))
    continue
  }
  const result = compiled(context)
  const evalNs = measure(() => compiled(context))
  const compileNs = measure(() => env.parse(expr), 200, 3)
  console.log(JSON.stringify({name, eval_ns: evalNs, compile_ns: compileNs, result}))
}

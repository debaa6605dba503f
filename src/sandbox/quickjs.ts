// QuickJS instances for the worker threads. The WebAssembly module is compiled once in the main
// thread and shared with every worker (a WebAssembly.Module crosses threads without recompiling);
// a worker instantiates it with a WebAssembly.Memory whose maximum is the run's memory limit.
//
// Between two runs the instance's memory is put back exactly as it was when instantiated (the
// pristine bytes copied back, everything above them zeroed): no byte a run leaves behind, such as
// another tenant's API answers in freed memory, can be read by the next, even through an
// out-of-bounds bug (this QuickJS, 2025-09-13, predates several upstream fixes of such bugs in
// typed arrays). About 1 ms a run; a new instance costs ~4 ms a run in a busy worker, most of it in
// garbage collection of the old memories.
//
// Why the memory maximum and not only runtime.setMemoryLimit(): under Emscripten QuickJS counts
// every allocation as 8 bytes (malloc_usable_size is unavailable there), so setMemoryLimit only
// bounds single allocations, never their sum (justjake/quickjs-emscripten#255 and #271). A memory
// that cannot grow past the limit is a hard cap: malloc fails and QuickJS throws "out of memory",
// or, on the few paths where QuickJS does not check a failed malloc, the instance traps. Either way
// only that run's instance is affected.
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import releaseSyncExport from '@jitl/quickjs-wasmfile-release-sync';
import { newQuickJSWASMModuleFromVariant, newVariant, type QuickJSSyncVariant, type QuickJSWASMModule } from 'quickjs-emscripten-core';

/** The package's types describe its CommonJS build; imported as ESM its default export is the variant. */
const releaseSync = releaseSyncExport as unknown as QuickJSSyncVariant;

const WASM_PAGE = 64 * 1024;
/** The memory minimum the module declares (16 MiB): data, the 5 MiB C stack, the first heap. */
const MIN_PAGES = 256;
/** Static data and the C stack sit below the heap (about 5.1 MiB in 0.32.0), plus slack. */
const BELOW_HEAP_BYTES = 6 * 1024 * 1024;
/** Set aside at the start of a run and released when it ends, so the host's epilogue (describing an
 * out-of-memory error, measuring the heap) never fails for want of memory. */
export const EPILOGUE_RESERVE_BYTES = 1024 * 1024;

export function compileQuickJS(): WebAssembly.Module {
  const require = createRequire(import.meta.url);
  return new WebAssembly.Module(readFileSync(require.resolve('@jitl/quickjs-wasmfile-release-sync/wasm')));
}

/** The Emscripten module behind a QuickJSWASMModule: quickjs-emscripten keeps it in a private field. */
interface EmscriptenHeap {
  _malloc(size: number): number;
  _free(pointer: number): void;
}

export interface QuickJSInstance {
  readonly quickjs: QuickJSWASMModule;
  readonly memory: WebAssembly.Memory;
  /** the run memory limit this instance was sized for */
  readonly memoryBytes: number;
  /**
   * Set once the instance trapped, ran out of host stack or failed to release a run: its state
   * outside the memory (Emscripten's abort flag) may be damaged, so it is never used again.
   */
  broken: boolean;
  /** Sets EPILOGUE_RESERVE_BYTES aside; returns the function that releases it. */
  reserve(): () => void;
  /** Puts the memory back as it was right after instantiation. Only between runs. */
  reset(): void;
}

/**
 * Emscripten grows the memory by at least 5% of its size at a time, so it stops up to 5% short of
 * the maximum: the maximum leaves that much room above what a run may use.
 */
function maximumPages(memoryBytes: number): number {
  return Math.max(MIN_PAGES, Math.ceil(((memoryBytes + BELOW_HEAP_BYTES + EPILOGUE_RESERVE_BYTES) * 1.06) / WASM_PAGE));
}

export async function instantiateQuickJS(wasmModule: WebAssembly.Module, memoryBytes: number): Promise<QuickJSInstance> {
  const memory = new WebAssembly.Memory({ initial: MIN_PAGES, maximum: maximumPages(memoryBytes) });
  const quickjs = await newQuickJSWASMModuleFromVariant(newVariant(releaseSync, { wasmModule, wasmMemory: memory }));
  const heap = (quickjs as unknown as { module?: Partial<EmscriptenHeap> }).module;
  const pristine = pristineBytes(memory);
  return {
    quickjs,
    memory,
    memoryBytes,
    broken: false,
    reset() {
      const bytes = new Uint8Array(memory.buffer);
      bytes.set(pristine);
      bytes.fill(0, pristine.length);
    },
    reserve() {
      // Best effort: without the private field (another quickjs-emscripten version) runs still
      // work, the epilogue of an out-of-memory run is merely less likely to succeed.
      if (typeof heap?._malloc !== 'function' || typeof heap._free !== 'function') return () => {};
      const pointer = heap._malloc(EPILOGUE_RESERVE_BYTES);
      let released = pointer === 0;
      return () => {
        if (!released) heap._free!(pointer);
        released = true;
      };
    },
  };
}

const ZERO_PAGE = Buffer.alloc(WASM_PAGE);

/** A copy of the memory up to its last non-zero page: everything above is zero after instantiation. */
function pristineBytes(memory: WebAssembly.Memory): Uint8Array {
  const bytes = Buffer.from(memory.buffer);
  let end = bytes.length;
  // Page by page (a native comparison), not byte by byte: ~10 MiB of zeros to skip.
  while (end > 0 && ZERO_PAGE.equals(bytes.subarray(end - WASM_PAGE, end))) end -= WASM_PAGE;
  return new Uint8Array(bytes.subarray(0, end));
}

/** True when the memory cannot grow again (a trap then means memory ran out). */
export function memoryExhausted(instance: QuickJSInstance): boolean {
  return instance.memory.buffer.byteLength * 1.05 > maximumPages(instance.memoryBytes) * WASM_PAGE;
}

let schedstat: boolean | null = null;

/**
 * CPU time of the calling thread in milliseconds, from Linux's /proc/thread-self/schedstat
 * (nanoseconds on the CPU; ~20 us to read). Null elsewhere: callers then count the time spent
 * inside the interpreter instead, which is an upper bound.
 */
export function threadCpuMs(): number | null {
  if (schedstat === false) return null;
  try {
    const text = readFileSync('/proc/thread-self/schedstat', 'latin1');
    schedstat = true;
    return Number(text.slice(0, text.indexOf(' '))) / 1e6;
  } catch {
    schedstat = false;
    return null;
  }
}

// A fake libnvidia-ml.so.1 for the nvml driver's tests: the same entry points (nvml_api.h), with
// devices from a scenario the test picks through fake_nvml_set_scenario(). Built as a shared
// library by the tests only; never installed.
//
// Scenarios:
//   0  two GPUs: minor 0 an H100 (MIG off), minor 1 an A100 with MIG on and two MIG devices
//   1  nvmlInit_v2 fails with NVML_ERROR_DRIVER_NOT_LOADED
//   2  as 0, but GPU 0 has fallen off the bus (queries return NVML_ERROR_GPU_IS_LOST)
//   3  as 0, but the A100 has MIG on and no MIG devices
// With FAKE_NVML_WITHOUT_PCI_INFO defined, nvmlDeviceGetPciInfo_v3 is missing (an old or broken
// library).
#include <cstring>

#include "agent/drivers/nvml/nvml_api.h"

namespace {

struct FakeDevice {
  unsigned int minor;
  const char* uuid;
  const char* name;
  unsigned long long memory;
  int cc_major, cc_minor;
  unsigned int arch;
  int brand;
  const char* bus_id;
  bool mig;
  int parent;  // MIG devices: index of the parent GPU, else -1
  unsigned int slices;
  unsigned long long mig_memory_mb;
  unsigned int sms;
};

FakeDevice g_devices[] = {
    {0, "GPU-aaaaaaaa-0000-4000-8000-000000000000", "NVIDIA H100 80GB HBM3", 85899345920ULL, 9, 0,
     9, 14, "00000000:3B:00.0", false, -1, 0, 0, 132},
    {1, "GPU-bbbbbbbb-1111-4111-8111-111111111111", "NVIDIA A100-SXM4-40GB", 42949672960ULL, 8, 0,
     7, 2, "00000000:86:00.0", true, -1, 0, 0, 108},
    {1, "MIG-cccccccc-2222-4222-8222-222222222222", "", 0, 8, 0, 7, 2, "", false, 1, 1, 4864, 14},
    {1, "MIG-dddddddd-3333-4333-8333-333333333333", "", 0, 8, 0, 7, 2, "", false, 1, 3, 19968, 42},
};
int g_scenario = 0;
int g_inits = 0;
int g_shutdowns = 0;

FakeDevice* Dev(nvmlDevice_t d) { return reinterpret_cast<FakeDevice*>(d); }
nvmlDevice_t Handle(FakeDevice* d) { return reinterpret_cast<nvmlDevice_t>(d); }
bool Lost(nvmlDevice_t d) { return g_scenario == 2 && Dev(d) == &g_devices[0]; }

void Copy(char* out, unsigned int length, const char* text) {
  std::strncpy(out, text, length);
  out[length - 1] = '\0';
}

}  // namespace

extern "C" {

void fake_nvml_set_scenario(int scenario) {
  g_scenario = scenario;
  g_inits = 0;
  g_shutdowns = 0;
}
int fake_nvml_inits() { return g_inits; }
int fake_nvml_shutdowns() { return g_shutdowns; }

nvmlReturn_t nvmlInit_v2(void) {
  if (g_scenario == 1) return kNvmlErrorDriverNotLoaded;
  ++g_inits;
  return kNvmlSuccess;
}
nvmlReturn_t nvmlShutdown(void) {
  ++g_shutdowns;
  return kNvmlSuccess;
}
const char* nvmlErrorString(nvmlReturn_t r) {
  switch (r) {
    case kNvmlErrorDriverNotLoaded:
      return "Driver Not Loaded";
    case kNvmlErrorGpuIsLost:
      return "GPU is lost";
    case kNvmlErrorNotFound:
      return "Not Found";
    default:
      return "Unknown Error";
  }
}
nvmlReturn_t nvmlSystemGetDriverVersion(char* version, unsigned int length) {
  Copy(version, length, "550.90.07");
  return kNvmlSuccess;
}
nvmlReturn_t nvmlSystemGetCudaDriverVersion(int* version) {
  *version = 12040;
  return kNvmlSuccess;
}
nvmlReturn_t nvmlDeviceGetCount_v2(unsigned int* count) {
  *count = 2;
  return kNvmlSuccess;
}
nvmlReturn_t nvmlDeviceGetHandleByIndex_v2(unsigned int index, nvmlDevice_t* device) {
  if (index >= 2) return 2;
  *device = Handle(&g_devices[index]);
  return kNvmlSuccess;
}
nvmlReturn_t nvmlDeviceGetName(nvmlDevice_t d, char* name, unsigned int length) {
  Copy(name, length, Dev(d)->name);
  return kNvmlSuccess;
}
nvmlReturn_t nvmlDeviceGetUUID(nvmlDevice_t d, char* uuid, unsigned int length) {
  Copy(uuid, length, Dev(d)->uuid);
  return kNvmlSuccess;
}
nvmlReturn_t nvmlDeviceGetMinorNumber(nvmlDevice_t d, unsigned int* minor) {
  *minor = Dev(d)->minor;
  return kNvmlSuccess;
}
nvmlReturn_t nvmlDeviceGetMemoryInfo(nvmlDevice_t d, nvmlMemory_t* memory) {
  if (Lost(d)) return kNvmlErrorGpuIsLost;
  memory->total = Dev(d)->memory;
  memory->free = Dev(d)->memory;
  memory->used = 0;
  return kNvmlSuccess;
}
nvmlReturn_t nvmlDeviceGetCudaComputeCapability(nvmlDevice_t d, int* major, int* minor) {
  *major = Dev(d)->cc_major;
  *minor = Dev(d)->cc_minor;
  return kNvmlSuccess;
}
nvmlReturn_t nvmlDeviceGetArchitecture(nvmlDevice_t d, unsigned int* arch) {
  *arch = Dev(d)->arch;
  return kNvmlSuccess;
}
nvmlReturn_t nvmlDeviceGetBrand(nvmlDevice_t d, int* brand) {
  *brand = Dev(d)->brand;
  return kNvmlSuccess;
}
#ifndef FAKE_NVML_WITHOUT_PCI_INFO
nvmlReturn_t nvmlDeviceGetPciInfo_v3(nvmlDevice_t d, nvmlPciInfo_t* pci) {
  std::memset(pci, 0, sizeof(*pci));
  Copy(pci->busId, sizeof(pci->busId), Dev(d)->bus_id);
  return kNvmlSuccess;
}
#endif
nvmlReturn_t nvmlDeviceGetMigMode(nvmlDevice_t d, unsigned int* current, unsigned int* pending) {
  *current = Dev(d)->mig ? 1 : 0;
  *pending = *current;
  return kNvmlSuccess;
}
nvmlReturn_t nvmlDeviceGetMaxMigDeviceCount(nvmlDevice_t d, unsigned int* count) {
  *count = Dev(d)->mig ? 7 : 0;
  return kNvmlSuccess;
}
nvmlReturn_t nvmlDeviceGetMigDeviceHandleByIndex(nvmlDevice_t d, unsigned int index,
                                                 nvmlDevice_t* mig) {
  if (g_scenario == 3 || Dev(d) != &g_devices[1] || index >= 2) return kNvmlErrorNotFound;
  *mig = Handle(&g_devices[2 + index]);
  return kNvmlSuccess;
}
nvmlReturn_t nvmlDeviceGetAttributes_v2(nvmlDevice_t d, nvmlDeviceAttributes_t* attrs) {
  std::memset(attrs, 0, sizeof(*attrs));
  attrs->multiprocessorCount = Dev(d)->sms;
  attrs->gpuInstanceSliceCount = Dev(d)->slices;
  attrs->computeInstanceSliceCount = Dev(d)->slices;
  attrs->memorySizeMB = Dev(d)->mig_memory_mb;
  return kNvmlSuccess;
}

}  // extern "C"

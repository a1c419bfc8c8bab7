// Standalone: does a Vulkan device flush f32 subnormals by default? (kforge issue 61 check)
#include <vulkan/vulkan.h>
#include <stdio.h>
#include <string.h>
#include <stdlib.h>
#include <math.h>
#include "probe_spv.h"
#define CK(x) do { VkResult r_ = (x); if (r_ != VK_SUCCESS) { printf("FAIL %s: %d\n", #x, r_); exit(1); } } while (0)
int main(void) {
  VkApplicationInfo app = {VK_STRUCTURE_TYPE_APPLICATION_INFO, 0, "p", 1, "p", 1, VK_API_VERSION_1_2};
  VkInstanceCreateInfo ici = {VK_STRUCTURE_TYPE_INSTANCE_CREATE_INFO, 0, 0, &app};
  VkInstance inst; CK(vkCreateInstance(&ici, 0, &inst));
  uint32_t n = 8; VkPhysicalDevice pds[8]; CK(vkEnumeratePhysicalDevices(inst, &n, pds));
  for (uint32_t di = 0; di < n; ++di) {
    VkPhysicalDevice pd = pds[di];
    VkPhysicalDeviceFloatControlsProperties fc = {VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_FLOAT_CONTROLS_PROPERTIES};
    VkPhysicalDeviceProperties2 p2 = {VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_PROPERTIES_2, &fc};
    vkGetPhysicalDeviceProperties2(pd, &p2);
    printf("device %u: %s driver %u\n  denormBehaviorIndependence %d, shaderDenormPreserveFloat32 %d, shaderDenormFlushToZeroFloat32 %d\n",
           di, p2.properties.deviceName, p2.properties.driverVersion, fc.denormBehaviorIndependence,
           fc.shaderDenormPreserveFloat32, fc.shaderDenormFlushToZeroFloat32);
    uint32_t qn = 16; VkQueueFamilyProperties qf[16]; vkGetPhysicalDeviceQueueFamilyProperties(pd, &qn, qf);
    uint32_t q = 0; while (q < qn && !(qf[q].queueFlags & VK_QUEUE_COMPUTE_BIT)) ++q;
    float prio = 1; VkDeviceQueueCreateInfo qci = {VK_STRUCTURE_TYPE_DEVICE_QUEUE_CREATE_INFO, 0, 0, q, 1, &prio};
    VkDeviceCreateInfo dci = {VK_STRUCTURE_TYPE_DEVICE_CREATE_INFO, 0, 0, 1, &qci};
    VkDevice dev; CK(vkCreateDevice(pd, &dci, 0, &dev));
    VkQueue queue; vkGetDeviceQueue(dev, q, 0, &queue);
    VkBufferCreateInfo bci = {VK_STRUCTURE_TYPE_BUFFER_CREATE_INFO, 0, 0, 64, VK_BUFFER_USAGE_STORAGE_BUFFER_BIT};
    VkBuffer buf; CK(vkCreateBuffer(dev, &bci, 0, &buf));
    VkMemoryRequirements mr; vkGetBufferMemoryRequirements(dev, buf, &mr);
    VkPhysicalDeviceMemoryProperties mp; vkGetPhysicalDeviceMemoryProperties(pd, &mp);
    uint32_t mt = 0; VkMemoryPropertyFlags want = VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT | VK_MEMORY_PROPERTY_HOST_COHERENT_BIT;
    while (mt < mp.memoryTypeCount && (!(mr.memoryTypeBits & (1u << mt)) || (mp.memoryTypes[mt].propertyFlags & want) != want)) ++mt;
    VkMemoryAllocateInfo mai = {VK_STRUCTURE_TYPE_MEMORY_ALLOCATE_INFO, 0, mr.size, mt};
    VkDeviceMemory mem; CK(vkAllocateMemory(dev, &mai, 0, &mem)); CK(vkBindBufferMemory(dev, buf, mem, 0));
    float* io; CK(vkMapMemory(dev, mem, 0, 64, 0, (void**)&io));
    float in[16] = {0x1p-130f, 1.0f, 0x1p100f, -100.0f};
    for (int i = 4; i < 16; ++i) in[i] = -1.0f;
    memcpy(io, in, sizeof in);
    VkDescriptorSetLayoutBinding b = {0, VK_DESCRIPTOR_TYPE_STORAGE_BUFFER, 1, VK_SHADER_STAGE_COMPUTE_BIT};
    VkDescriptorSetLayoutCreateInfo dl = {VK_STRUCTURE_TYPE_DESCRIPTOR_SET_LAYOUT_CREATE_INFO, 0, 0, 1, &b};
    VkDescriptorSetLayout dsl; CK(vkCreateDescriptorSetLayout(dev, &dl, 0, &dsl));
    VkPushConstantRange pcr = {VK_SHADER_STAGE_COMPUTE_BIT, 0, 8};
    VkPipelineLayoutCreateInfo pl = {VK_STRUCTURE_TYPE_PIPELINE_LAYOUT_CREATE_INFO, 0, 0, 1, &dsl, 1, &pcr};
    VkPipelineLayout layout; CK(vkCreatePipelineLayout(dev, &pl, 0, &layout));
    VkShaderModuleCreateInfo smi = {VK_STRUCTURE_TYPE_SHADER_MODULE_CREATE_INFO, 0, 0, probe_spv_len, (const uint32_t*)probe_spv};
    VkShaderModule sm; CK(vkCreateShaderModule(dev, &smi, 0, &sm));
    uint32_t one = 1; VkSpecializationMapEntry me = {0, 0, 4}; VkSpecializationInfo si = {1, &me, 4, &one};
    VkComputePipelineCreateInfo cpi = {VK_STRUCTURE_TYPE_COMPUTE_PIPELINE_CREATE_INFO, 0, 0,
      {VK_STRUCTURE_TYPE_PIPELINE_SHADER_STAGE_CREATE_INFO, 0, 0, VK_SHADER_STAGE_COMPUTE_BIT, sm, "main", &si}, layout};
    VkPipeline pipe; CK(vkCreateComputePipelines(dev, 0, 1, &cpi, 0, &pipe));
    VkDescriptorPoolSize ps = {VK_DESCRIPTOR_TYPE_STORAGE_BUFFER, 1};
    VkDescriptorPoolCreateInfo dpi = {VK_STRUCTURE_TYPE_DESCRIPTOR_POOL_CREATE_INFO, 0, 0, 1, 1, &ps};
    VkDescriptorPool pool; CK(vkCreateDescriptorPool(dev, &dpi, 0, &pool));
    VkDescriptorSetAllocateInfo dai = {VK_STRUCTURE_TYPE_DESCRIPTOR_SET_ALLOCATE_INFO, 0, pool, 1, &dsl};
    VkDescriptorSet ds; CK(vkAllocateDescriptorSets(dev, &dai, &ds));
    VkDescriptorBufferInfo dbi = {buf, 0, 64};
    VkWriteDescriptorSet wds = {VK_STRUCTURE_TYPE_WRITE_DESCRIPTOR_SET, 0, ds, 0, 0, 1, VK_DESCRIPTOR_TYPE_STORAGE_BUFFER, 0, &dbi};
    vkUpdateDescriptorSets(dev, 1, &wds, 0, 0);
    VkCommandPoolCreateInfo cpci = {VK_STRUCTURE_TYPE_COMMAND_POOL_CREATE_INFO, 0, 0, q};
    VkCommandPool cp; CK(vkCreateCommandPool(dev, &cpci, 0, &cp));
    VkCommandBufferAllocateInfo cbai = {VK_STRUCTURE_TYPE_COMMAND_BUFFER_ALLOCATE_INFO, 0, cp, VK_COMMAND_BUFFER_LEVEL_PRIMARY, 1};
    VkCommandBuffer cb; CK(vkAllocateCommandBuffers(dev, &cbai, &cb));
    VkCommandBufferBeginInfo cbi = {VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO};
    CK(vkBeginCommandBuffer(cb, &cbi));
    vkCmdBindPipeline(cb, VK_PIPELINE_BIND_POINT_COMPUTE, pipe);
    vkCmdBindDescriptorSets(cb, VK_PIPELINE_BIND_POINT_COMPUTE, layout, 0, 1, &ds, 0, 0);
    uint32_t push[2] = {0, 0}; vkCmdPushConstants(cb, layout, VK_SHADER_STAGE_COMPUTE_BIT, 0, 8, push);
    vkCmdDispatch(cb, 1, 1, 1);
    CK(vkEndCommandBuffer(cb));
    VkSubmitInfo sub = {VK_STRUCTURE_TYPE_SUBMIT_INFO, 0, 0, 0, 0, 1, &cb};
    CK(vkQueueSubmit(queue, 1, &sub, 0)); CK(vkQueueWaitIdle(queue));
    const char* names[] = {"a*1", "a+a", "(a*1)*2^100", "a/1", "exp(-100)", "fma(a,1,0)", "1/2^100", "2^-100*2^-30 (output)"};
    for (int i = 0; i < 8; ++i) printf("  %-24s = %a (%g)\n", names[i], io[4 + i], io[4 + i]);
    int flushes = io[4] == 0 || io[5] == 0 || io[6] == 0;
    printf("  kforge probe says: %s\n", flushes ? "flushes" : "keeps");
    vkDestroyDevice(dev, 0);
  }
  return 0;
}

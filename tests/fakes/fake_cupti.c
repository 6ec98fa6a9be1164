/* SPDX-License-Identifier: MIT */
/*
 * fake_cupti.c - a stand-in for libcupti.so.13 that a test drives through
 * fake_cupti.h.  It implements the entry points libgpuwatch_cupti.so may
 * resolve (see docs of the injection library) with the signatures from the
 * CUDA 13 CUPTI headers and the behaviour those headers document:
 *
 *   cuptiSubscribe          one subscriber at a time; a second one gets
 *                           CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED;
 *                           the result can be forced (another tool present)
 *   cuptiUnsubscribe        drops the subscriber and its enabled callbacks
 *   cuptiEnableDomain/Callback  per (domain, cbid) bookkeeping
 *   cuptiGetCallbackName    the runtime and driver names of the CUDA 13
 *                           cbid enums (runtime without the _vNNNN suffix)
 *   cuptiActivityEnable/Disable, RegisterCallbacks, FlushAll,
 *   GetNextRecord, GetNumDroppedRecords   a bounded record queue handed
 *                           out in the client's buffers on flush
 *   cuptiGetResultString, cuptiGetVersion (130001)
 *
 * State is process-global behind one mutex, which is never held while a
 * subscriber callback or buffer callback runs.  A flush is serialised by a
 * second mutex so that buffers are completed in record order.
 */
#include <errno.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <cupti.h>

#include "fake_cupti.h"

#define CBID_MAX 1024u /* above every domain's SIZE in CUDA 13 */

/* ---- names, from cupti_runtime_cbid.h / cupti_driver_cbid.h ---- */

static const char *const runtime_names[] = {
	[1] = "cudaDriverGetVersion",
	[2] = "cudaRuntimeGetVersion",
	[3] = "cudaGetDeviceCount",
	[4] = "cudaGetDeviceProperties",
	[5] = "cudaChooseDevice",
	[6] = "cudaGetChannelDesc",
	[7] = "cudaCreateChannelDesc",
	[8] = "cudaConfigureCall",
	[9] = "cudaSetupArgument",
	[10] = "cudaGetLastError",
	[11] = "cudaPeekAtLastError",
	[12] = "cudaGetErrorString",
	[13] = "cudaLaunch",
	[14] = "cudaFuncSetCacheConfig",
	[15] = "cudaFuncGetAttributes",
	[16] = "cudaSetDevice",
	[17] = "cudaGetDevice",
	[18] = "cudaSetValidDevices",
	[19] = "cudaSetDeviceFlags",
	[20] = "cudaMalloc",
	[21] = "cudaMallocPitch",
	[22] = "cudaFree",
	[23] = "cudaMallocArray",
	[24] = "cudaFreeArray",
	[25] = "cudaMallocHost",
	[26] = "cudaFreeHost",
	[27] = "cudaHostAlloc",
	[28] = "cudaHostGetDevicePointer",
	[29] = "cudaHostGetFlags",
	[30] = "cudaMemGetInfo",
	[31] = "cudaMemcpy",
	[32] = "cudaMemcpy2D",
	[33] = "cudaMemcpyToArray",
	[34] = "cudaMemcpy2DToArray",
	[35] = "cudaMemcpyFromArray",
	[36] = "cudaMemcpy2DFromArray",
	[37] = "cudaMemcpyArrayToArray",
	[38] = "cudaMemcpy2DArrayToArray",
	[39] = "cudaMemcpyToSymbol",
	[40] = "cudaMemcpyFromSymbol",
	[41] = "cudaMemcpyAsync",
	[42] = "cudaMemcpyToArrayAsync",
	[43] = "cudaMemcpyFromArrayAsync",
	[44] = "cudaMemcpy2DAsync",
	[45] = "cudaMemcpy2DToArrayAsync",
	[46] = "cudaMemcpy2DFromArrayAsync",
	[47] = "cudaMemcpyToSymbolAsync",
	[48] = "cudaMemcpyFromSymbolAsync",
	[49] = "cudaMemset",
	[50] = "cudaMemset2D",
	[51] = "cudaMemsetAsync",
	[52] = "cudaMemset2DAsync",
	[53] = "cudaGetSymbolAddress",
	[54] = "cudaGetSymbolSize",
	[55] = "cudaBindTexture",
	[56] = "cudaBindTexture2D",
	[57] = "cudaBindTextureToArray",
	[58] = "cudaUnbindTexture",
	[59] = "cudaGetTextureAlignmentOffset",
	[60] = "cudaGetTextureReference",
	[61] = "cudaBindSurfaceToArray",
	[62] = "cudaGetSurfaceReference",
	[63] = "cudaGLSetGLDevice",
	[64] = "cudaGLRegisterBufferObject",
	[65] = "cudaGLMapBufferObject",
	[66] = "cudaGLUnmapBufferObject",
	[67] = "cudaGLUnregisterBufferObject",
	[68] = "cudaGLSetBufferObjectMapFlags",
	[69] = "cudaGLMapBufferObjectAsync",
	[70] = "cudaGLUnmapBufferObjectAsync",
	[71] = "cudaWGLGetDevice",
	[72] = "cudaGraphicsGLRegisterImage",
	[73] = "cudaGraphicsGLRegisterBuffer",
	[74] = "cudaGraphicsUnregisterResource",
	[75] = "cudaGraphicsResourceSetMapFlags",
	[76] = "cudaGraphicsMapResources",
	[77] = "cudaGraphicsUnmapResources",
	[78] = "cudaGraphicsResourceGetMappedPointer",
	[79] = "cudaGraphicsSubResourceGetMappedArray",
	[80] = "cudaVDPAUGetDevice",
	[81] = "cudaVDPAUSetVDPAUDevice",
	[82] = "cudaGraphicsVDPAURegisterVideoSurface",
	[83] = "cudaGraphicsVDPAURegisterOutputSurface",
	[84] = "cudaD3D11GetDevice",
	[85] = "cudaD3D11GetDevices",
	[86] = "cudaD3D11SetDirect3DDevice",
	[87] = "cudaGraphicsD3D11RegisterResource",
	[88] = "cudaD3D10GetDevice",
	[89] = "cudaD3D10GetDevices",
	[90] = "cudaD3D10SetDirect3DDevice",
	[91] = "cudaGraphicsD3D10RegisterResource",
	[92] = "cudaD3D10RegisterResource",
	[93] = "cudaD3D10UnregisterResource",
	[94] = "cudaD3D10MapResources",
	[95] = "cudaD3D10UnmapResources",
	[96] = "cudaD3D10ResourceSetMapFlags",
	[97] = "cudaD3D10ResourceGetSurfaceDimensions",
	[98] = "cudaD3D10ResourceGetMappedArray",
	[99] = "cudaD3D10ResourceGetMappedPointer",
	[100] = "cudaD3D10ResourceGetMappedSize",
	[101] = "cudaD3D10ResourceGetMappedPitch",
	[102] = "cudaD3D9GetDevice",
	[103] = "cudaD3D9GetDevices",
	[104] = "cudaD3D9SetDirect3DDevice",
	[105] = "cudaD3D9GetDirect3DDevice",
	[106] = "cudaGraphicsD3D9RegisterResource",
	[107] = "cudaD3D9RegisterResource",
	[108] = "cudaD3D9UnregisterResource",
	[109] = "cudaD3D9MapResources",
	[110] = "cudaD3D9UnmapResources",
	[111] = "cudaD3D9ResourceSetMapFlags",
	[112] = "cudaD3D9ResourceGetSurfaceDimensions",
	[113] = "cudaD3D9ResourceGetMappedArray",
	[114] = "cudaD3D9ResourceGetMappedPointer",
	[115] = "cudaD3D9ResourceGetMappedSize",
	[116] = "cudaD3D9ResourceGetMappedPitch",
	[117] = "cudaD3D9Begin",
	[118] = "cudaD3D9End",
	[119] = "cudaD3D9RegisterVertexBuffer",
	[120] = "cudaD3D9UnregisterVertexBuffer",
	[121] = "cudaD3D9MapVertexBuffer",
	[122] = "cudaD3D9UnmapVertexBuffer",
	[123] = "cudaThreadExit",
	[124] = "cudaSetDoubleForDevice",
	[125] = "cudaSetDoubleForHost",
	[126] = "cudaThreadSynchronize",
	[127] = "cudaThreadGetLimit",
	[128] = "cudaThreadSetLimit",
	[129] = "cudaStreamCreate",
	[130] = "cudaStreamDestroy",
	[131] = "cudaStreamSynchronize",
	[132] = "cudaStreamQuery",
	[133] = "cudaEventCreate",
	[134] = "cudaEventCreateWithFlags",
	[135] = "cudaEventRecord",
	[136] = "cudaEventDestroy",
	[137] = "cudaEventSynchronize",
	[138] = "cudaEventQuery",
	[139] = "cudaEventElapsedTime",
	[140] = "cudaMalloc3D",
	[141] = "cudaMalloc3DArray",
	[142] = "cudaMemset3D",
	[143] = "cudaMemset3DAsync",
	[144] = "cudaMemcpy3D",
	[145] = "cudaMemcpy3DAsync",
	[146] = "cudaThreadSetCacheConfig",
	[147] = "cudaStreamWaitEvent",
	[148] = "cudaD3D11GetDirect3DDevice",
	[149] = "cudaD3D10GetDirect3DDevice",
	[150] = "cudaThreadGetCacheConfig",
	[151] = "cudaPointerGetAttributes",
	[152] = "cudaHostRegister",
	[153] = "cudaHostUnregister",
	[154] = "cudaDeviceCanAccessPeer",
	[155] = "cudaDeviceEnablePeerAccess",
	[156] = "cudaDeviceDisablePeerAccess",
	[157] = "cudaPeerRegister",
	[158] = "cudaPeerUnregister",
	[159] = "cudaPeerGetDevicePointer",
	[160] = "cudaMemcpyPeer",
	[161] = "cudaMemcpyPeerAsync",
	[162] = "cudaMemcpy3DPeer",
	[163] = "cudaMemcpy3DPeerAsync",
	[164] = "cudaDeviceReset",
	[165] = "cudaDeviceSynchronize",
	[166] = "cudaDeviceGetLimit",
	[167] = "cudaDeviceSetLimit",
	[168] = "cudaDeviceGetCacheConfig",
	[169] = "cudaDeviceSetCacheConfig",
	[170] = "cudaProfilerInitialize",
	[171] = "cudaProfilerStart",
	[172] = "cudaProfilerStop",
	[173] = "cudaDeviceGetByPCIBusId",
	[174] = "cudaDeviceGetPCIBusId",
	[175] = "cudaGLGetDevices",
	[176] = "cudaIpcGetEventHandle",
	[177] = "cudaIpcOpenEventHandle",
	[178] = "cudaIpcGetMemHandle",
	[179] = "cudaIpcOpenMemHandle",
	[180] = "cudaIpcCloseMemHandle",
	[181] = "cudaArrayGetInfo",
	[182] = "cudaFuncSetSharedMemConfig",
	[183] = "cudaDeviceGetSharedMemConfig",
	[184] = "cudaDeviceSetSharedMemConfig",
	[185] = "cudaCreateTextureObject",
	[186] = "cudaDestroyTextureObject",
	[187] = "cudaGetTextureObjectResourceDesc",
	[188] = "cudaGetTextureObjectTextureDesc",
	[189] = "cudaCreateSurfaceObject",
	[190] = "cudaDestroySurfaceObject",
	[191] = "cudaGetSurfaceObjectResourceDesc",
	[192] = "cudaMallocMipmappedArray",
	[193] = "cudaGetMipmappedArrayLevel",
	[194] = "cudaFreeMipmappedArray",
	[195] = "cudaBindTextureToMipmappedArray",
	[196] = "cudaGraphicsResourceGetMappedMipmappedArray",
	[197] = "cudaStreamAddCallback",
	[198] = "cudaStreamCreateWithFlags",
	[199] = "cudaGetTextureObjectResourceViewDesc",
	[200] = "cudaDeviceGetAttribute",
	[201] = "cudaStreamDestroy",
	[202] = "cudaStreamCreateWithPriority",
	[203] = "cudaStreamGetPriority",
	[204] = "cudaStreamGetFlags",
	[205] = "cudaDeviceGetStreamPriorityRange",
	[206] = "cudaMallocManaged",
	[207] = "cudaOccupancyMaxActiveBlocksPerMultiprocessor",
	[208] = "cudaStreamAttachMemAsync",
	[209] = "cudaGetErrorName",
	[210] = "cudaOccupancyMaxActiveBlocksPerMultiprocessor",
	[211] = "cudaLaunchKernel",
	[212] = "cudaGetDeviceFlags",
	[213] = "cudaLaunch_ptsz",
	[214] = "cudaLaunchKernel_ptsz",
	[215] = "cudaMemcpy_ptds",
	[216] = "cudaMemcpy2D_ptds",
	[217] = "cudaMemcpyToArray_ptds",
	[218] = "cudaMemcpy2DToArray_ptds",
	[219] = "cudaMemcpyFromArray_ptds",
	[220] = "cudaMemcpy2DFromArray_ptds",
	[221] = "cudaMemcpyArrayToArray_ptds",
	[222] = "cudaMemcpy2DArrayToArray_ptds",
	[223] = "cudaMemcpyToSymbol_ptds",
	[224] = "cudaMemcpyFromSymbol_ptds",
	[225] = "cudaMemcpyAsync_ptsz",
	[226] = "cudaMemcpyToArrayAsync_ptsz",
	[227] = "cudaMemcpyFromArrayAsync_ptsz",
	[228] = "cudaMemcpy2DAsync_ptsz",
	[229] = "cudaMemcpy2DToArrayAsync_ptsz",
	[230] = "cudaMemcpy2DFromArrayAsync_ptsz",
	[231] = "cudaMemcpyToSymbolAsync_ptsz",
	[232] = "cudaMemcpyFromSymbolAsync_ptsz",
	[233] = "cudaMemset_ptds",
	[234] = "cudaMemset2D_ptds",
	[235] = "cudaMemsetAsync_ptsz",
	[236] = "cudaMemset2DAsync_ptsz",
	[237] = "cudaStreamGetPriority_ptsz",
	[238] = "cudaStreamGetFlags_ptsz",
	[239] = "cudaStreamSynchronize_ptsz",
	[240] = "cudaStreamQuery_ptsz",
	[241] = "cudaStreamAttachMemAsync_ptsz",
	[242] = "cudaEventRecord_ptsz",
	[243] = "cudaMemset3D_ptds",
	[244] = "cudaMemset3DAsync_ptsz",
	[245] = "cudaMemcpy3D_ptds",
	[246] = "cudaMemcpy3DAsync_ptsz",
	[247] = "cudaStreamWaitEvent_ptsz",
	[248] = "cudaStreamAddCallback_ptsz",
	[249] = "cudaMemcpy3DPeer_ptds",
	[250] = "cudaMemcpy3DPeerAsync_ptsz",
	[251] = "cudaOccupancyMaxActiveBlocksPerMultiprocessorWithFlags",
	[252] = "cudaMemPrefetchAsync",
	[253] = "cudaMemPrefetchAsync_ptsz",
	[254] = "cudaMemAdvise",
	[255] = "cudaDeviceGetP2PAttribute",
	[256] = "cudaGraphicsEGLRegisterImage",
	[257] = "cudaEGLStreamConsumerConnect",
	[258] = "cudaEGLStreamConsumerDisconnect",
	[259] = "cudaEGLStreamConsumerAcquireFrame",
	[260] = "cudaEGLStreamConsumerReleaseFrame",
	[261] = "cudaEGLStreamProducerConnect",
	[262] = "cudaEGLStreamProducerDisconnect",
	[263] = "cudaEGLStreamProducerPresentFrame",
	[264] = "cudaEGLStreamProducerReturnFrame",
	[265] = "cudaGraphicsResourceGetMappedEglFrame",
	[266] = "cudaMemRangeGetAttribute",
	[267] = "cudaMemRangeGetAttributes",
	[268] = "cudaEGLStreamConsumerConnectWithFlags",
	[269] = "cudaLaunchCooperativeKernel",
	[270] = "cudaLaunchCooperativeKernel_ptsz",
	[271] = "cudaEventCreateFromEGLSync",
	[272] = "cudaLaunchCooperativeKernelMultiDevice",
	[273] = "cudaFuncSetAttribute",
	[274] = "cudaImportExternalMemory",
	[275] = "cudaExternalMemoryGetMappedBuffer",
	[276] = "cudaExternalMemoryGetMappedMipmappedArray",
	[277] = "cudaDestroyExternalMemory",
	[278] = "cudaImportExternalSemaphore",
	[279] = "cudaSignalExternalSemaphoresAsync",
	[280] = "cudaSignalExternalSemaphoresAsync_ptsz",
	[281] = "cudaWaitExternalSemaphoresAsync",
	[282] = "cudaWaitExternalSemaphoresAsync_ptsz",
	[283] = "cudaDestroyExternalSemaphore",
	[284] = "cudaLaunchHostFunc",
	[285] = "cudaLaunchHostFunc_ptsz",
	[286] = "cudaGraphCreate",
	[287] = "cudaGraphKernelNodeGetParams",
	[288] = "cudaGraphKernelNodeSetParams",
	[289] = "cudaGraphAddKernelNode",
	[290] = "cudaGraphAddMemcpyNode",
	[291] = "cudaGraphMemcpyNodeGetParams",
	[292] = "cudaGraphMemcpyNodeSetParams",
	[293] = "cudaGraphAddMemsetNode",
	[294] = "cudaGraphMemsetNodeGetParams",
	[295] = "cudaGraphMemsetNodeSetParams",
	[296] = "cudaGraphAddHostNode",
	[297] = "cudaGraphHostNodeGetParams",
	[298] = "cudaGraphAddChildGraphNode",
	[299] = "cudaGraphChildGraphNodeGetGraph",
	[300] = "cudaGraphAddEmptyNode",
	[301] = "cudaGraphClone",
	[302] = "cudaGraphNodeFindInClone",
	[303] = "cudaGraphNodeGetType",
	[304] = "cudaGraphGetRootNodes",
	[305] = "cudaGraphNodeGetDependencies",
	[306] = "cudaGraphNodeGetDependentNodes",
	[307] = "cudaGraphAddDependencies",
	[308] = "cudaGraphRemoveDependencies",
	[309] = "cudaGraphDestroyNode",
	[310] = "cudaGraphInstantiate",
	[311] = "cudaGraphLaunch",
	[312] = "cudaGraphLaunch_ptsz",
	[313] = "cudaGraphExecDestroy",
	[314] = "cudaGraphDestroy",
	[315] = "cudaStreamBeginCapture",
	[316] = "cudaStreamBeginCapture_ptsz",
	[317] = "cudaStreamIsCapturing",
	[318] = "cudaStreamIsCapturing_ptsz",
	[319] = "cudaStreamEndCapture",
	[320] = "cudaStreamEndCapture_ptsz",
	[321] = "cudaGraphHostNodeSetParams",
	[322] = "cudaGraphGetNodes",
	[323] = "cudaGraphGetEdges",
	[324] = "cudaStreamGetCaptureInfo",
	[325] = "cudaStreamGetCaptureInfo_ptsz",
	[326] = "cudaGraphExecKernelNodeSetParams",
	[327] = "cudaThreadExchangeStreamCaptureMode",
	[328] = "cudaDeviceGetNvSciSyncAttributes",
	[329] = "cudaOccupancyAvailableDynamicSMemPerBlock",
	[330] = "cudaStreamSetFlags",
	[331] = "cudaStreamSetFlags_ptsz",
	[332] = "cudaGraphExecMemcpyNodeSetParams",
	[333] = "cudaGraphExecMemsetNodeSetParams",
	[334] = "cudaGraphExecHostNodeSetParams",
	[335] = "cudaGraphExecUpdate",
	[336] = "cudaGetFuncBySymbol",
	[337] = "cudaCtxResetPersistingL2Cache",
	[338] = "cudaGraphKernelNodeCopyAttributes",
	[339] = "cudaGraphKernelNodeGetAttribute",
	[340] = "cudaGraphKernelNodeSetAttribute",
	[341] = "cudaStreamCopyAttributes",
	[342] = "cudaStreamCopyAttributes_ptsz",
	[343] = "cudaStreamGetAttribute",
	[344] = "cudaStreamGetAttribute_ptsz",
	[345] = "cudaStreamSetAttribute",
	[346] = "cudaStreamSetAttribute_ptsz",
	[347] = "cudaDeviceGetTexture1DLinearMaxWidth",
	[348] = "cudaGraphUpload",
	[349] = "cudaGraphUpload_ptsz",
	[350] = "cudaGraphAddMemcpyNodeToSymbol",
	[351] = "cudaGraphAddMemcpyNodeFromSymbol",
	[352] = "cudaGraphAddMemcpyNode1D",
	[353] = "cudaGraphMemcpyNodeSetParamsToSymbol",
	[354] = "cudaGraphMemcpyNodeSetParamsFromSymbol",
	[355] = "cudaGraphMemcpyNodeSetParams1D",
	[356] = "cudaGraphExecMemcpyNodeSetParamsToSymbol",
	[357] = "cudaGraphExecMemcpyNodeSetParamsFromSymbol",
	[358] = "cudaGraphExecMemcpyNodeSetParams1D",
	[359] = "cudaArrayGetSparseProperties",
	[360] = "cudaMipmappedArrayGetSparseProperties",
	[361] = "cudaGraphExecChildGraphNodeSetParams",
	[362] = "cudaGraphAddEventRecordNode",
	[363] = "cudaGraphEventRecordNodeGetEvent",
	[364] = "cudaGraphEventRecordNodeSetEvent",
	[365] = "cudaGraphAddEventWaitNode",
	[366] = "cudaGraphEventWaitNodeGetEvent",
	[367] = "cudaGraphEventWaitNodeSetEvent",
	[368] = "cudaGraphExecEventRecordNodeSetEvent",
	[369] = "cudaGraphExecEventWaitNodeSetEvent",
	[370] = "cudaEventRecordWithFlags",
	[371] = "cudaEventRecordWithFlags_ptsz",
	[372] = "cudaDeviceGetDefaultMemPool",
	[373] = "cudaMallocAsync",
	[374] = "cudaMallocAsync_ptsz",
	[375] = "cudaFreeAsync",
	[376] = "cudaFreeAsync_ptsz",
	[377] = "cudaMemPoolTrimTo",
	[378] = "cudaMemPoolSetAttribute",
	[379] = "cudaMemPoolGetAttribute",
	[380] = "cudaMemPoolSetAccess",
	[381] = "cudaArrayGetPlane",
	[382] = "cudaMemPoolGetAccess",
	[383] = "cudaMemPoolCreate",
	[384] = "cudaMemPoolDestroy",
	[385] = "cudaDeviceSetMemPool",
	[386] = "cudaDeviceGetMemPool",
	[387] = "cudaMemPoolExportToShareableHandle",
	[388] = "cudaMemPoolImportFromShareableHandle",
	[389] = "cudaMemPoolExportPointer",
	[390] = "cudaMemPoolImportPointer",
	[391] = "cudaMallocFromPoolAsync",
	[392] = "cudaMallocFromPoolAsync_ptsz",
	[393] = "cudaSignalExternalSemaphoresAsync",
	[394] = "cudaSignalExternalSemaphoresAsync_ptsz",
	[395] = "cudaWaitExternalSemaphoresAsync",
	[396] = "cudaWaitExternalSemaphoresAsync_ptsz",
	[397] = "cudaGraphAddExternalSemaphoresSignalNode",
	[398] = "cudaGraphExternalSemaphoresSignalNodeGetParams",
	[399] = "cudaGraphExternalSemaphoresSignalNodeSetParams",
	[400] = "cudaGraphAddExternalSemaphoresWaitNode",
	[401] = "cudaGraphExternalSemaphoresWaitNodeGetParams",
	[402] = "cudaGraphExternalSemaphoresWaitNodeSetParams",
	[403] = "cudaGraphExecExternalSemaphoresSignalNodeSetParams",
	[404] = "cudaGraphExecExternalSemaphoresWaitNodeSetParams",
	[405] = "cudaDeviceFlushGPUDirectRDMAWrites",
	[406] = "cudaGetDriverEntryPoint",
	[407] = "cudaGetDriverEntryPoint_ptsz",
	[408] = "cudaGraphDebugDotPrint",
	[409] = "cudaStreamGetCaptureInfo_v2",
	[410] = "cudaStreamGetCaptureInfo_v2_ptsz",
	[411] = "cudaStreamUpdateCaptureDependencies",
	[412] = "cudaStreamUpdateCaptureDependencies_ptsz",
	[413] = "cudaUserObjectCreate",
	[414] = "cudaUserObjectRetain",
	[415] = "cudaUserObjectRelease",
	[416] = "cudaGraphRetainUserObject",
	[417] = "cudaGraphReleaseUserObject",
	[418] = "cudaGraphInstantiateWithFlags",
	[419] = "cudaGraphAddMemAllocNode",
	[420] = "cudaGraphMemAllocNodeGetParams",
	[421] = "cudaGraphAddMemFreeNode",
	[422] = "cudaGraphMemFreeNodeGetParams",
	[423] = "cudaDeviceGraphMemTrim",
	[424] = "cudaDeviceGetGraphMemAttribute",
	[425] = "cudaDeviceSetGraphMemAttribute",
	[426] = "cudaGraphNodeSetEnabled",
	[427] = "cudaGraphNodeGetEnabled",
	[428] = "cudaArrayGetMemoryRequirements",
	[429] = "cudaMipmappedArrayGetMemoryRequirements",
	[430] = "cudaLaunchKernelExC",
	[431] = "cudaLaunchKernelExC_ptsz",
	[432] = "cudaOccupancyMaxPotentialClusterSize",
	[433] = "cudaOccupancyMaxActiveClusters",
	[434] = "cudaCreateTextureObject_v2",
	[435] = "cudaGetTextureObjectTextureDesc_v2",
	[436] = "cudaGraphInstantiateWithParams",
	[437] = "cudaGraphInstantiateWithParams_ptsz",
	[438] = "cudaGraphExecGetFlags",
	[439] = "cudaGetKernel",
	[440] = "cudaGetDeviceProperties",
	[441] = "cudaStreamGetId",
	[442] = "cudaStreamGetId_ptsz",
	[443] = "cudaGraphInstantiate",
	[444] = "cudaInitDevice",
	[445] = "cudaGraphAddNode",
	[446] = "cudaGraphNodeSetParams",
	[447] = "cudaGraphExecNodeSetParams",
	[448] = "cudaMemAdvise",
	[449] = "cudaMemPrefetchAsync",
	[450] = "cudaMemPrefetchAsync_ptsz",
	[451] = "cudaFuncGetName",
	[452] = "cudaStreamBeginCaptureToGraph",
	[453] = "cudaStreamBeginCaptureToGraph_ptsz",
	[454] = "cudaGraphConditionalHandleCreate",
	[455] = "cudaGraphGetEdges",
	[456] = "cudaGraphNodeGetDependencies",
	[457] = "cudaGraphNodeGetDependentNodes",
	[458] = "cudaGraphAddDependencies",
	[459] = "cudaGraphRemoveDependencies",
	[460] = "cudaGraphAddNode",
	[461] = "cudaStreamGetCaptureInfo",
	[462] = "cudaStreamGetCaptureInfo_ptsz",
	[463] = "cudaStreamUpdateCaptureDependencies",
	[464] = "cudaStreamUpdateCaptureDependencies_ptsz",
	[465] = "cudaDeviceRegisterAsyncNotification",
	[466] = "cudaDeviceUnregisterAsyncNotification",
	[467] = "cudaFuncGetParamInfo",
	[468] = "cudaGetDriverEntryPointByVersion",
	[469] = "cudaGetDriverEntryPointByVersion_ptsz",
	[470] = "cudaLibraryLoadData",
	[471] = "cudaLibraryLoadFromFile",
	[472] = "cudaLibraryUnload",
	[473] = "cudaLibraryGetKernel",
	[474] = "cudaLibraryGetGlobal",
	[475] = "cudaLibraryGetManaged",
	[476] = "cudaLibraryGetUnifiedFunction",
	[477] = "cudaLibraryGetKernelCount",
	[478] = "cudaLibraryEnumerateKernels",
	[479] = "cudaKernelSetAttributeForDevice",
	[480] = "cudaStreamGetDevice",
	[481] = "cudaStreamGetDevice_ptsz",
	[482] = "cudaMemcpyBatchAsync",
	[483] = "cudaMemcpyBatchAsync_ptsz",
	[484] = "cudaMemcpy3DBatchAsync",
	[485] = "cudaMemcpy3DBatchAsync_ptsz",
	[486] = "cudaEventElapsedTime",
	[487] = "cudaMemPrefetchBatchAsync",
	[488] = "cudaMemPrefetchBatchAsync_ptsz",
	[489] = "cudaMemDiscardBatchAsync",
	[490] = "cudaMemDiscardBatchAsync_ptsz",
	[491] = "cudaMemDiscardAndPrefetchBatchAsync",
	[492] = "cudaMemDiscardAndPrefetchBatchAsync_ptsz",
	[493] = "cudaGetExportTable",
	[494] = "__cudaRegisterFatBinary",
	[495] = "__cudaRegisterFatBinaryEnd",
	[496] = "__cudaUnregisterFatBinary",
	[497] = "__cudaRegisterVar",
	[498] = "__cudaRegisterHostVar",
	[499] = "__cudaRegisterFunction",
	[500] = "__cudaRegisterManagedVar",
	[501] = "__cudaInitModule",
	[502] = "__cudaPushCallConfiguration",
	[503] = "__cudaPopCallConfiguration",
	[504] = "__cudaGetKernel",
	[505] = "__cudaLaunchKernel",
	[506] = "__cudaLaunchKernel_ptsz",
	[507] = "__cudaRegisterUnifiedTable",
	[508] = "__cudaGetProcAddress",
	[509] = "cudaMemcpyBatchAsync",
	[510] = "cudaMemcpyBatchAsync_ptsz",
	[511] = "cudaMemcpy3DBatchAsync",
	[512] = "cudaMemcpy3DBatchAsync_ptsz",
	[513] = "cudaLogsRegisterCallback",
	[514] = "cudaLogsUnregisterCallback",
	[515] = "cudaLogsCurrent",
	[516] = "cudaLogsDumpToFile",
	[517] = "cudaLogsDumpToMemory",
	[518] = "cudaMemGetDefaultMemPool",
	[519] = "cudaMemGetMemPool",
	[520] = "cudaMemSetMemPool",
	[521] = "cudaDeviceGetHostAtomicCapabilities",
	[522] = "cudaDeviceGetP2PAtomicCapabilities",
};

static const char *const driver_names[] = {
	[1] = "cuInit",
	[2] = "cuDriverGetVersion",
	[3] = "cuDeviceGet",
	[4] = "cuDeviceGetCount",
	[5] = "cuDeviceGetName",
	[6] = "cuDeviceComputeCapability",
	[7] = "cuDeviceTotalMem",
	[8] = "cuDeviceGetProperties",
	[9] = "cuDeviceGetAttribute",
	[10] = "cuCtxCreate",
	[11] = "cuCtxDestroy",
	[12] = "cuCtxAttach",
	[13] = "cuCtxDetach",
	[14] = "cuCtxPushCurrent",
	[15] = "cuCtxPopCurrent",
	[16] = "cuCtxGetDevice",
	[17] = "cuCtxSynchronize",
	[18] = "cuModuleLoad",
	[19] = "cuModuleLoadData",
	[20] = "cuModuleLoadDataEx",
	[21] = "cuModuleLoadFatBinary",
	[22] = "cuModuleUnload",
	[23] = "cuModuleGetFunction",
	[24] = "cuModuleGetGlobal",
	[25] = "cu64ModuleGetGlobal",
	[26] = "cuModuleGetTexRef",
	[27] = "cuMemGetInfo",
	[28] = "cu64MemGetInfo",
	[29] = "cuMemAlloc",
	[30] = "cu64MemAlloc",
	[31] = "cuMemAllocPitch",
	[32] = "cu64MemAllocPitch",
	[33] = "cuMemFree",
	[34] = "cu64MemFree",
	[35] = "cuMemGetAddressRange",
	[36] = "cu64MemGetAddressRange",
	[37] = "cuMemAllocHost",
	[38] = "cuMemFreeHost",
	[39] = "cuMemHostAlloc",
	[40] = "cuMemHostGetDevicePointer",
	[41] = "cu64MemHostGetDevicePointer",
	[42] = "cuMemHostGetFlags",
	[43] = "cuMemcpyHtoD",
	[44] = "cu64MemcpyHtoD",
	[45] = "cuMemcpyDtoH",
	[46] = "cu64MemcpyDtoH",
	[47] = "cuMemcpyDtoD",
	[48] = "cu64MemcpyDtoD",
	[49] = "cuMemcpyDtoA",
	[50] = "cu64MemcpyDtoA",
	[51] = "cuMemcpyAtoD",
	[52] = "cu64MemcpyAtoD",
	[53] = "cuMemcpyHtoA",
	[54] = "cuMemcpyAtoH",
	[55] = "cuMemcpyAtoA",
	[56] = "cuMemcpy2D",
	[57] = "cuMemcpy2DUnaligned",
	[58] = "cuMemcpy3D",
	[59] = "cu64Memcpy3D",
	[60] = "cuMemcpyHtoDAsync",
	[61] = "cu64MemcpyHtoDAsync",
	[62] = "cuMemcpyDtoHAsync",
	[63] = "cu64MemcpyDtoHAsync",
	[64] = "cuMemcpyDtoDAsync",
	[65] = "cu64MemcpyDtoDAsync",
	[66] = "cuMemcpyHtoAAsync",
	[67] = "cuMemcpyAtoHAsync",
	[68] = "cuMemcpy2DAsync",
	[69] = "cuMemcpy3DAsync",
	[70] = "cu64Memcpy3DAsync",
	[71] = "cuMemsetD8",
	[72] = "cu64MemsetD8",
	[73] = "cuMemsetD16",
	[74] = "cu64MemsetD16",
	[75] = "cuMemsetD32",
	[76] = "cu64MemsetD32",
	[77] = "cuMemsetD2D8",
	[78] = "cu64MemsetD2D8",
	[79] = "cuMemsetD2D16",
	[80] = "cu64MemsetD2D16",
	[81] = "cuMemsetD2D32",
	[82] = "cu64MemsetD2D32",
	[83] = "cuFuncSetBlockShape",
	[84] = "cuFuncSetSharedSize",
	[85] = "cuFuncGetAttribute",
	[86] = "cuFuncSetCacheConfig",
	[87] = "cuArrayCreate",
	[88] = "cuArrayGetDescriptor",
	[89] = "cuArrayDestroy",
	[90] = "cuArray3DCreate",
	[91] = "cuArray3DGetDescriptor",
	[92] = "cuTexRefCreate",
	[93] = "cuTexRefDestroy",
	[94] = "cuTexRefSetArray",
	[95] = "cuTexRefSetAddress",
	[96] = "cu64TexRefSetAddress",
	[97] = "cuTexRefSetAddress2D",
	[98] = "cu64TexRefSetAddress2D",
	[99] = "cuTexRefSetFormat",
	[100] = "cuTexRefSetAddressMode",
	[101] = "cuTexRefSetFilterMode",
	[102] = "cuTexRefSetFlags",
	[103] = "cuTexRefGetAddress",
	[104] = "cu64TexRefGetAddress",
	[105] = "cuTexRefGetArray",
	[106] = "cuTexRefGetAddressMode",
	[107] = "cuTexRefGetFilterMode",
	[108] = "cuTexRefGetFormat",
	[109] = "cuTexRefGetFlags",
	[110] = "cuParamSetSize",
	[111] = "cuParamSeti",
	[112] = "cuParamSetf",
	[113] = "cuParamSetv",
	[114] = "cuParamSetTexRef",
	[115] = "cuLaunch",
	[116] = "cuLaunchGrid",
	[117] = "cuLaunchGridAsync",
	[118] = "cuEventCreate",
	[119] = "cuEventRecord",
	[120] = "cuEventQuery",
	[121] = "cuEventSynchronize",
	[122] = "cuEventDestroy",
	[123] = "cuEventElapsedTime",
	[124] = "cuStreamCreate",
	[125] = "cuStreamQuery",
	[126] = "cuStreamSynchronize",
	[127] = "cuStreamDestroy",
	[128] = "cuGraphicsUnregisterResource",
	[129] = "cuGraphicsSubResourceGetMappedArray",
	[130] = "cuGraphicsResourceGetMappedPointer",
	[131] = "cu64GraphicsResourceGetMappedPointer",
	[132] = "cuGraphicsResourceSetMapFlags",
	[133] = "cuGraphicsMapResources",
	[134] = "cuGraphicsUnmapResources",
	[135] = "cuGetExportTable",
	[136] = "cuCtxSetLimit",
	[137] = "cuCtxGetLimit",
	[138] = "cuD3D10GetDevice",
	[139] = "cuD3D10CtxCreate",
	[140] = "cuGraphicsD3D10RegisterResource",
	[141] = "cuD3D10RegisterResource",
	[142] = "cuD3D10UnregisterResource",
	[143] = "cuD3D10MapResources",
	[144] = "cuD3D10UnmapResources",
	[145] = "cuD3D10ResourceSetMapFlags",
	[146] = "cuD3D10ResourceGetMappedArray",
	[147] = "cuD3D10ResourceGetMappedPointer",
	[148] = "cuD3D10ResourceGetMappedSize",
	[149] = "cuD3D10ResourceGetMappedPitch",
	[150] = "cuD3D10ResourceGetSurfaceDimensions",
	[151] = "cuD3D11GetDevice",
	[152] = "cuD3D11CtxCreate",
	[153] = "cuGraphicsD3D11RegisterResource",
	[154] = "cuD3D9GetDevice",
	[155] = "cuD3D9CtxCreate",
	[156] = "cuGraphicsD3D9RegisterResource",
	[157] = "cuD3D9GetDirect3DDevice",
	[158] = "cuD3D9RegisterResource",
	[159] = "cuD3D9UnregisterResource",
	[160] = "cuD3D9MapResources",
	[161] = "cuD3D9UnmapResources",
	[162] = "cuD3D9ResourceSetMapFlags",
	[163] = "cuD3D9ResourceGetSurfaceDimensions",
	[164] = "cuD3D9ResourceGetMappedArray",
	[165] = "cuD3D9ResourceGetMappedPointer",
	[166] = "cuD3D9ResourceGetMappedSize",
	[167] = "cuD3D9ResourceGetMappedPitch",
	[168] = "cuD3D9Begin",
	[169] = "cuD3D9End",
	[170] = "cuD3D9RegisterVertexBuffer",
	[171] = "cuD3D9MapVertexBuffer",
	[172] = "cuD3D9UnmapVertexBuffer",
	[173] = "cuD3D9UnregisterVertexBuffer",
	[174] = "cuGLCtxCreate",
	[175] = "cuGraphicsGLRegisterBuffer",
	[176] = "cuGraphicsGLRegisterImage",
	[177] = "cuWGLGetDevice",
	[178] = "cuGLInit",
	[179] = "cuGLRegisterBufferObject",
	[180] = "cuGLMapBufferObject",
	[181] = "cuGLUnmapBufferObject",
	[182] = "cuGLUnregisterBufferObject",
	[183] = "cuGLSetBufferObjectMapFlags",
	[184] = "cuGLMapBufferObjectAsync",
	[185] = "cuGLUnmapBufferObjectAsync",
	[186] = "cuVDPAUGetDevice",
	[187] = "cuVDPAUCtxCreate",
	[188] = "cuGraphicsVDPAURegisterVideoSurface",
	[189] = "cuGraphicsVDPAURegisterOutputSurface",
	[190] = "cuModuleGetSurfRef",
	[191] = "cuSurfRefCreate",
	[192] = "cuSurfRefDestroy",
	[193] = "cuSurfRefSetFormat",
	[194] = "cuSurfRefSetArray",
	[195] = "cuSurfRefGetFormat",
	[196] = "cuSurfRefGetArray",
	[197] = "cu64DeviceTotalMem",
	[198] = "cu64D3D10ResourceGetMappedPointer",
	[199] = "cu64D3D10ResourceGetMappedSize",
	[200] = "cu64D3D10ResourceGetMappedPitch",
	[201] = "cu64D3D10ResourceGetSurfaceDimensions",
	[202] = "cu64D3D9ResourceGetSurfaceDimensions",
	[203] = "cu64D3D9ResourceGetMappedPointer",
	[204] = "cu64D3D9ResourceGetMappedSize",
	[205] = "cu64D3D9ResourceGetMappedPitch",
	[206] = "cu64D3D9MapVertexBuffer",
	[207] = "cu64GLMapBufferObject",
	[208] = "cu64GLMapBufferObjectAsync",
	[209] = "cuD3D11GetDevices",
	[210] = "cuD3D11CtxCreateOnDevice",
	[211] = "cuD3D10GetDevices",
	[212] = "cuD3D10CtxCreateOnDevice",
	[213] = "cuD3D9GetDevices",
	[214] = "cuD3D9CtxCreateOnDevice",
	[215] = "cu64MemHostAlloc",
	[216] = "cuMemsetD8Async",
	[217] = "cu64MemsetD8Async",
	[218] = "cuMemsetD16Async",
	[219] = "cu64MemsetD16Async",
	[220] = "cuMemsetD32Async",
	[221] = "cu64MemsetD32Async",
	[222] = "cuMemsetD2D8Async",
	[223] = "cu64MemsetD2D8Async",
	[224] = "cuMemsetD2D16Async",
	[225] = "cu64MemsetD2D16Async",
	[226] = "cuMemsetD2D32Async",
	[227] = "cu64MemsetD2D32Async",
	[228] = "cu64ArrayCreate",
	[229] = "cu64ArrayGetDescriptor",
	[230] = "cu64Array3DCreate",
	[231] = "cu64Array3DGetDescriptor",
	[232] = "cu64Memcpy2D",
	[233] = "cu64Memcpy2DUnaligned",
	[234] = "cu64Memcpy2DAsync",
	[235] = "cuCtxCreate_v2",
	[236] = "cuD3D10CtxCreate_v2",
	[237] = "cuD3D11CtxCreate_v2",
	[238] = "cuD3D9CtxCreate_v2",
	[239] = "cuGLCtxCreate_v2",
	[240] = "cuVDPAUCtxCreate_v2",
	[241] = "cuModuleGetGlobal_v2",
	[242] = "cuMemGetInfo_v2",
	[243] = "cuMemAlloc_v2",
	[244] = "cuMemAllocPitch_v2",
	[245] = "cuMemFree_v2",
	[246] = "cuMemGetAddressRange_v2",
	[247] = "cuMemHostGetDevicePointer_v2",
	[248] = "cuMemcpy_v2",
	[249] = "cuMemsetD8_v2",
	[250] = "cuMemsetD16_v2",
	[251] = "cuMemsetD32_v2",
	[252] = "cuMemsetD2D8_v2",
	[253] = "cuMemsetD2D16_v2",
	[254] = "cuMemsetD2D32_v2",
	[255] = "cuTexRefSetAddress_v2",
	[256] = "cuTexRefSetAddress2D_v2",
	[257] = "cuTexRefGetAddress_v2",
	[258] = "cuGraphicsResourceGetMappedPointer_v2",
	[259] = "cuDeviceTotalMem_v2",
	[260] = "cuD3D10ResourceGetMappedPointer_v2",
	[261] = "cuD3D10ResourceGetMappedSize_v2",
	[262] = "cuD3D10ResourceGetMappedPitch_v2",
	[263] = "cuD3D10ResourceGetSurfaceDimensions_v2",
	[264] = "cuD3D9ResourceGetSurfaceDimensions_v2",
	[265] = "cuD3D9ResourceGetMappedPointer_v2",
	[266] = "cuD3D9ResourceGetMappedSize_v2",
	[267] = "cuD3D9ResourceGetMappedPitch_v2",
	[268] = "cuD3D9MapVertexBuffer_v2",
	[269] = "cuGLMapBufferObject_v2",
	[270] = "cuGLMapBufferObjectAsync_v2",
	[271] = "cuMemHostAlloc_v2",
	[272] = "cuArrayCreate_v2",
	[273] = "cuArrayGetDescriptor_v2",
	[274] = "cuArray3DCreate_v2",
	[275] = "cuArray3DGetDescriptor_v2",
	[276] = "cuMemcpyHtoD_v2",
	[277] = "cuMemcpyHtoDAsync_v2",
	[278] = "cuMemcpyDtoH_v2",
	[279] = "cuMemcpyDtoHAsync_v2",
	[280] = "cuMemcpyDtoD_v2",
	[281] = "cuMemcpyDtoDAsync_v2",
	[282] = "cuMemcpyAtoH_v2",
	[283] = "cuMemcpyAtoHAsync_v2",
	[284] = "cuMemcpyAtoD_v2",
	[285] = "cuMemcpyDtoA_v2",
	[286] = "cuMemcpyAtoA_v2",
	[287] = "cuMemcpy2D_v2",
	[288] = "cuMemcpy2DUnaligned_v2",
	[289] = "cuMemcpy2DAsync_v2",
	[290] = "cuMemcpy3D_v2",
	[291] = "cuMemcpy3DAsync_v2",
	[292] = "cuMemcpyHtoA_v2",
	[293] = "cuMemcpyHtoAAsync_v2",
	[294] = "cuMemAllocHost_v2",
	[295] = "cuStreamWaitEvent",
	[296] = "cuCtxGetApiVersion",
	[297] = "cuD3D10GetDirect3DDevice",
	[298] = "cuD3D11GetDirect3DDevice",
	[299] = "cuCtxGetCacheConfig",
	[300] = "cuCtxSetCacheConfig",
	[301] = "cuMemHostRegister",
	[302] = "cuMemHostUnregister",
	[303] = "cuCtxSetCurrent",
	[304] = "cuCtxGetCurrent",
	[305] = "cuMemcpy",
	[306] = "cuMemcpyAsync",
	[307] = "cuLaunchKernel",
	[308] = "cuProfilerStart",
	[309] = "cuProfilerStop",
	[310] = "cuPointerGetAttribute",
	[311] = "cuProfilerInitialize",
	[312] = "cuDeviceCanAccessPeer",
	[313] = "cuCtxEnablePeerAccess",
	[314] = "cuCtxDisablePeerAccess",
	[315] = "cuMemPeerRegister",
	[316] = "cuMemPeerUnregister",
	[317] = "cuMemPeerGetDevicePointer",
	[318] = "cuMemcpyPeer",
	[319] = "cuMemcpyPeerAsync",
	[320] = "cuMemcpy3DPeer",
	[321] = "cuMemcpy3DPeerAsync",
	[322] = "cuCtxDestroy_v2",
	[323] = "cuCtxPushCurrent_v2",
	[324] = "cuCtxPopCurrent_v2",
	[325] = "cuEventDestroy_v2",
	[326] = "cuStreamDestroy_v2",
	[327] = "cuTexRefSetAddress2D_v3",
	[328] = "cuIpcGetMemHandle",
	[329] = "cuIpcOpenMemHandle",
	[330] = "cuIpcCloseMemHandle",
	[331] = "cuDeviceGetByPCIBusId",
	[332] = "cuDeviceGetPCIBusId",
	[333] = "cuGLGetDevices",
	[334] = "cuIpcGetEventHandle",
	[335] = "cuIpcOpenEventHandle",
	[336] = "cuCtxSetSharedMemConfig",
	[337] = "cuCtxGetSharedMemConfig",
	[338] = "cuFuncSetSharedMemConfig",
	[339] = "cuTexObjectCreate",
	[340] = "cuTexObjectDestroy",
	[341] = "cuTexObjectGetResourceDesc",
	[342] = "cuTexObjectGetTextureDesc",
	[343] = "cuSurfObjectCreate",
	[344] = "cuSurfObjectDestroy",
	[345] = "cuSurfObjectGetResourceDesc",
	[346] = "cuStreamAddCallback",
	[347] = "cuMipmappedArrayCreate",
	[348] = "cuMipmappedArrayGetLevel",
	[349] = "cuMipmappedArrayDestroy",
	[350] = "cuTexRefSetMipmappedArray",
	[351] = "cuTexRefSetMipmapFilterMode",
	[352] = "cuTexRefSetMipmapLevelBias",
	[353] = "cuTexRefSetMipmapLevelClamp",
	[354] = "cuTexRefSetMaxAnisotropy",
	[355] = "cuTexRefGetMipmappedArray",
	[356] = "cuTexRefGetMipmapFilterMode",
	[357] = "cuTexRefGetMipmapLevelBias",
	[358] = "cuTexRefGetMipmapLevelClamp",
	[359] = "cuTexRefGetMaxAnisotropy",
	[360] = "cuGraphicsResourceGetMappedMipmappedArray",
	[361] = "cuTexObjectGetResourceViewDesc",
	[362] = "cuLinkCreate",
	[363] = "cuLinkAddData",
	[364] = "cuLinkAddFile",
	[365] = "cuLinkComplete",
	[366] = "cuLinkDestroy",
	[367] = "cuStreamCreateWithPriority",
	[368] = "cuStreamGetPriority",
	[369] = "cuStreamGetFlags",
	[370] = "cuCtxGetStreamPriorityRange",
	[371] = "cuMemAllocManaged",
	[372] = "cuGetErrorString",
	[373] = "cuGetErrorName",
	[374] = "cuOccupancyMaxActiveBlocksPerMultiprocessor",
	[375] = "cuCompilePtx",
	[376] = "cuBinaryFree",
	[377] = "cuStreamAttachMemAsync",
	[378] = "cuPointerSetAttribute",
	[379] = "cuMemHostRegister_v2",
	[380] = "cuGraphicsResourceSetMapFlags_v2",
	[381] = "cuLinkCreate_v2",
	[382] = "cuLinkAddData_v2",
	[383] = "cuLinkAddFile_v2",
	[384] = "cuOccupancyMaxPotentialBlockSize",
	[385] = "cuGLGetDevices_v2",
	[386] = "cuDevicePrimaryCtxRetain",
	[387] = "cuDevicePrimaryCtxRelease",
	[388] = "cuDevicePrimaryCtxSetFlags",
	[389] = "cuDevicePrimaryCtxReset",
	[390] = "cuGraphicsEGLRegisterImage",
	[391] = "cuCtxGetFlags",
	[392] = "cuDevicePrimaryCtxGetState",
	[393] = "cuEGLStreamConsumerConnect",
	[394] = "cuEGLStreamConsumerDisconnect",
	[395] = "cuEGLStreamConsumerAcquireFrame",
	[396] = "cuEGLStreamConsumerReleaseFrame",
	[397] = "cuMemcpyHtoD_v2_ptds",
	[398] = "cuMemcpyDtoH_v2_ptds",
	[399] = "cuMemcpyDtoD_v2_ptds",
	[400] = "cuMemcpyDtoA_v2_ptds",
	[401] = "cuMemcpyAtoD_v2_ptds",
	[402] = "cuMemcpyHtoA_v2_ptds",
	[403] = "cuMemcpyAtoH_v2_ptds",
	[404] = "cuMemcpyAtoA_v2_ptds",
	[405] = "cuMemcpy2D_v2_ptds",
	[406] = "cuMemcpy2DUnaligned_v2_ptds",
	[407] = "cuMemcpy3D_v2_ptds",
	[408] = "cuMemcpy_ptds",
	[409] = "cuMemcpyPeer_ptds",
	[410] = "cuMemcpy3DPeer_ptds",
	[411] = "cuMemsetD8_v2_ptds",
	[412] = "cuMemsetD16_v2_ptds",
	[413] = "cuMemsetD32_v2_ptds",
	[414] = "cuMemsetD2D8_v2_ptds",
	[415] = "cuMemsetD2D16_v2_ptds",
	[416] = "cuMemsetD2D32_v2_ptds",
	[417] = "cuGLMapBufferObject_v2_ptds",
	[418] = "cuMemcpyAsync_ptsz",
	[419] = "cuMemcpyHtoAAsync_v2_ptsz",
	[420] = "cuMemcpyAtoHAsync_v2_ptsz",
	[421] = "cuMemcpyHtoDAsync_v2_ptsz",
	[422] = "cuMemcpyDtoHAsync_v2_ptsz",
	[423] = "cuMemcpyDtoDAsync_v2_ptsz",
	[424] = "cuMemcpy2DAsync_v2_ptsz",
	[425] = "cuMemcpy3DAsync_v2_ptsz",
	[426] = "cuMemcpyPeerAsync_ptsz",
	[427] = "cuMemcpy3DPeerAsync_ptsz",
	[428] = "cuMemsetD8Async_ptsz",
	[429] = "cuMemsetD16Async_ptsz",
	[430] = "cuMemsetD32Async_ptsz",
	[431] = "cuMemsetD2D8Async_ptsz",
	[432] = "cuMemsetD2D16Async_ptsz",
	[433] = "cuMemsetD2D32Async_ptsz",
	[434] = "cuStreamGetPriority_ptsz",
	[435] = "cuStreamGetFlags_ptsz",
	[436] = "cuStreamWaitEvent_ptsz",
	[437] = "cuStreamAddCallback_ptsz",
	[438] = "cuStreamAttachMemAsync_ptsz",
	[439] = "cuStreamQuery_ptsz",
	[440] = "cuStreamSynchronize_ptsz",
	[441] = "cuEventRecord_ptsz",
	[442] = "cuLaunchKernel_ptsz",
	[443] = "cuGraphicsMapResources_ptsz",
	[444] = "cuGraphicsUnmapResources_ptsz",
	[445] = "cuGLMapBufferObjectAsync_v2_ptsz",
	[446] = "cuEGLStreamProducerConnect",
	[447] = "cuEGLStreamProducerDisconnect",
	[448] = "cuEGLStreamProducerPresentFrame",
	[449] = "cuGraphicsResourceGetMappedEglFrame",
	[450] = "cuPointerGetAttributes",
	[451] = "cuOccupancyMaxActiveBlocksPerMultiprocessorWithFlags",
	[452] = "cuOccupancyMaxPotentialBlockSizeWithFlags",
	[453] = "cuEGLStreamProducerReturnFrame",
	[454] = "cuDeviceGetP2PAttribute",
	[455] = "cuTexRefSetBorderColor",
	[456] = "cuTexRefGetBorderColor",
	[457] = "cuMemAdvise",
	[458] = "cuStreamWaitValue32",
	[459] = "cuStreamWaitValue32_ptsz",
	[460] = "cuStreamWriteValue32",
	[461] = "cuStreamWriteValue32_ptsz",
	[462] = "cuStreamBatchMemOp",
	[463] = "cuStreamBatchMemOp_ptsz",
	[464] = "cuNVNbufferGetPointer",
	[465] = "cuNVNtextureGetArray",
	[466] = "cuNNSetAllocator",
	[467] = "cuMemPrefetchAsync",
	[468] = "cuMemPrefetchAsync_ptsz",
	[469] = "cuEventCreateFromNVNSync",
	[470] = "cuEGLStreamConsumerConnectWithFlags",
	[471] = "cuMemRangeGetAttribute",
	[472] = "cuMemRangeGetAttributes",
	[473] = "cuStreamWaitValue64",
	[474] = "cuStreamWaitValue64_ptsz",
	[475] = "cuStreamWriteValue64",
	[476] = "cuStreamWriteValue64_ptsz",
	[477] = "cuLaunchCooperativeKernel",
	[478] = "cuLaunchCooperativeKernel_ptsz",
	[479] = "cuEventCreateFromEGLSync",
	[480] = "cuLaunchCooperativeKernelMultiDevice",
	[481] = "cuFuncSetAttribute",
	[482] = "cuDeviceGetUuid",
	[483] = "cuStreamGetCtx",
	[484] = "cuStreamGetCtx_ptsz",
	[485] = "cuImportExternalMemory",
	[486] = "cuExternalMemoryGetMappedBuffer",
	[487] = "cuExternalMemoryGetMappedMipmappedArray",
	[488] = "cuDestroyExternalMemory",
	[489] = "cuImportExternalSemaphore",
	[490] = "cuSignalExternalSemaphoresAsync",
	[491] = "cuSignalExternalSemaphoresAsync_ptsz",
	[492] = "cuWaitExternalSemaphoresAsync",
	[493] = "cuWaitExternalSemaphoresAsync_ptsz",
	[494] = "cuDestroyExternalSemaphore",
	[495] = "cuStreamBeginCapture",
	[496] = "cuStreamBeginCapture_ptsz",
	[497] = "cuStreamEndCapture",
	[498] = "cuStreamEndCapture_ptsz",
	[499] = "cuStreamIsCapturing",
	[500] = "cuStreamIsCapturing_ptsz",
	[501] = "cuGraphCreate",
	[502] = "cuGraphAddKernelNode",
	[503] = "cuGraphKernelNodeGetParams",
	[504] = "cuGraphAddMemcpyNode",
	[505] = "cuGraphMemcpyNodeGetParams",
	[506] = "cuGraphAddMemsetNode",
	[507] = "cuGraphMemsetNodeGetParams",
	[508] = "cuGraphMemsetNodeSetParams",
	[509] = "cuGraphNodeGetType",
	[510] = "cuGraphGetRootNodes",
	[511] = "cuGraphNodeGetDependencies",
	[512] = "cuGraphNodeGetDependentNodes",
	[513] = "cuGraphInstantiate",
	[514] = "cuGraphLaunch",
	[515] = "cuGraphLaunch_ptsz",
	[516] = "cuGraphExecDestroy",
	[517] = "cuGraphDestroy",
	[518] = "cuGraphAddDependencies",
	[519] = "cuGraphRemoveDependencies",
	[520] = "cuGraphMemcpyNodeSetParams",
	[521] = "cuGraphKernelNodeSetParams",
	[522] = "cuGraphDestroyNode",
	[523] = "cuGraphClone",
	[524] = "cuGraphNodeFindInClone",
	[525] = "cuGraphAddChildGraphNode",
	[526] = "cuGraphAddEmptyNode",
	[527] = "cuLaunchHostFunc",
	[528] = "cuLaunchHostFunc_ptsz",
	[529] = "cuGraphChildGraphNodeGetGraph",
	[530] = "cuGraphAddHostNode",
	[531] = "cuGraphHostNodeGetParams",
	[532] = "cuDeviceGetLuid",
	[533] = "cuGraphHostNodeSetParams",
	[534] = "cuGraphGetNodes",
	[535] = "cuGraphGetEdges",
	[536] = "cuStreamGetCaptureInfo",
	[537] = "cuStreamGetCaptureInfo_ptsz",
	[538] = "cuGraphExecKernelNodeSetParams",
	[539] = "cuStreamBeginCapture_v2",
	[540] = "cuStreamBeginCapture_v2_ptsz",
	[541] = "cuThreadExchangeStreamCaptureMode",
	[542] = "cuDeviceGetNvSciSyncAttributes",
	[543] = "cuOccupancyAvailableDynamicSMemPerBlock",
	[544] = "cuDevicePrimaryCtxRelease_v2",
	[545] = "cuDevicePrimaryCtxReset_v2",
	[546] = "cuDevicePrimaryCtxSetFlags_v2",
	[547] = "cuMemAddressReserve",
	[548] = "cuMemAddressFree",
	[549] = "cuMemCreate",
	[550] = "cuMemRelease",
	[551] = "cuMemMap",
	[552] = "cuMemUnmap",
	[553] = "cuMemSetAccess",
	[554] = "cuMemExportToShareableHandle",
	[555] = "cuMemImportFromShareableHandle",
	[556] = "cuMemGetAllocationGranularity",
	[557] = "cuMemGetAllocationPropertiesFromHandle",
	[558] = "cuMemGetAccess",
	[559] = "cuStreamSetFlags",
	[560] = "cuStreamSetFlags_ptsz",
	[561] = "cuGraphExecUpdate",
	[562] = "cuGraphExecMemcpyNodeSetParams",
	[563] = "cuGraphExecMemsetNodeSetParams",
	[564] = "cuGraphExecHostNodeSetParams",
	[565] = "cuMemRetainAllocationHandle",
	[566] = "cuFuncGetModule",
	[567] = "cuIpcOpenMemHandle_v2",
	[568] = "cuCtxResetPersistingL2Cache",
	[569] = "cuGraphKernelNodeCopyAttributes",
	[570] = "cuGraphKernelNodeGetAttribute",
	[571] = "cuGraphKernelNodeSetAttribute",
	[572] = "cuStreamCopyAttributes",
	[573] = "cuStreamCopyAttributes_ptsz",
	[574] = "cuStreamGetAttribute",
	[575] = "cuStreamGetAttribute_ptsz",
	[576] = "cuStreamSetAttribute",
	[577] = "cuStreamSetAttribute_ptsz",
	[578] = "cuGraphInstantiate_v2",
	[579] = "cuDeviceGetTexture1DLinearMaxWidth",
	[580] = "cuGraphUpload",
	[581] = "cuGraphUpload_ptsz",
	[582] = "cuArrayGetSparseProperties",
	[583] = "cuMipmappedArrayGetSparseProperties",
	[584] = "cuMemMapArrayAsync",
	[585] = "cuMemMapArrayAsync_ptsz",
	[586] = "cuGraphExecChildGraphNodeSetParams",
	[587] = "cuEventRecordWithFlags",
	[588] = "cuEventRecordWithFlags_ptsz",
	[589] = "cuGraphAddEventRecordNode",
	[590] = "cuGraphAddEventWaitNode",
	[591] = "cuGraphEventRecordNodeGetEvent",
	[592] = "cuGraphEventWaitNodeGetEvent",
	[593] = "cuGraphEventRecordNodeSetEvent",
	[594] = "cuGraphEventWaitNodeSetEvent",
	[595] = "cuGraphExecEventRecordNodeSetEvent",
	[596] = "cuGraphExecEventWaitNodeSetEvent",
	[597] = "cuArrayGetPlane",
	[598] = "cuMemAllocAsync",
	[599] = "cuMemAllocAsync_ptsz",
	[600] = "cuMemFreeAsync",
	[601] = "cuMemFreeAsync_ptsz",
	[602] = "cuMemPoolTrimTo",
	[603] = "cuMemPoolSetAttribute",
	[604] = "cuMemPoolGetAttribute",
	[605] = "cuMemPoolSetAccess",
	[606] = "cuDeviceGetDefaultMemPool",
	[607] = "cuMemPoolCreate",
	[608] = "cuMemPoolDestroy",
	[609] = "cuDeviceSetMemPool",
	[610] = "cuDeviceGetMemPool",
	[611] = "cuMemAllocFromPoolAsync",
	[612] = "cuMemAllocFromPoolAsync_ptsz",
	[613] = "cuMemPoolExportToShareableHandle",
	[614] = "cuMemPoolImportFromShareableHandle",
	[615] = "cuMemPoolExportPointer",
	[616] = "cuMemPoolImportPointer",
	[617] = "cuMemPoolGetAccess",
	[618] = "cuGraphAddExternalSemaphoresSignalNode",
	[619] = "cuGraphExternalSemaphoresSignalNodeGetParams",
	[620] = "cuGraphExternalSemaphoresSignalNodeSetParams",
	[621] = "cuGraphAddExternalSemaphoresWaitNode",
	[622] = "cuGraphExternalSemaphoresWaitNodeGetParams",
	[623] = "cuGraphExternalSemaphoresWaitNodeSetParams",
	[624] = "cuGraphExecExternalSemaphoresSignalNodeSetParams",
	[625] = "cuGraphExecExternalSemaphoresWaitNodeSetParams",
	[626] = "cuGetProcAddress",
	[627] = "cuFlushGPUDirectRDMAWrites",
	[628] = "cuGraphDebugDotPrint",
	[629] = "cuStreamGetCaptureInfo_v2",
	[630] = "cuStreamGetCaptureInfo_v2_ptsz",
	[631] = "cuStreamUpdateCaptureDependencies",
	[632] = "cuStreamUpdateCaptureDependencies_ptsz",
	[633] = "cuUserObjectCreate",
	[634] = "cuUserObjectRetain",
	[635] = "cuUserObjectRelease",
	[636] = "cuGraphRetainUserObject",
	[637] = "cuGraphReleaseUserObject",
	[638] = "cuGraphAddMemAllocNode",
	[639] = "cuGraphAddMemFreeNode",
	[640] = "cuDeviceGraphMemTrim",
	[641] = "cuDeviceGetGraphMemAttribute",
	[642] = "cuDeviceSetGraphMemAttribute",
	[643] = "cuGraphInstantiateWithFlags",
	[644] = "cuDeviceGetExecAffinitySupport",
	[645] = "cuCtxCreate_v3",
	[646] = "cuCtxGetExecAffinity",
	[647] = "cuDeviceGetUuid_v2",
	[648] = "cuGraphMemAllocNodeGetParams",
	[649] = "cuGraphMemFreeNodeGetParams",
	[650] = "cuGraphNodeSetEnabled",
	[651] = "cuGraphNodeGetEnabled",
	[652] = "cuLaunchKernelEx",
	[653] = "cuLaunchKernelEx_ptsz",
	[654] = "cuArrayGetMemoryRequirements",
	[655] = "cuMipmappedArrayGetMemoryRequirements",
	[656] = "cuGraphInstantiateWithParams",
	[657] = "cuGraphInstantiateWithParams_ptsz",
	[658] = "cuGraphExecGetFlags",
	[659] = "cuStreamWaitValue32_v2",
	[660] = "cuStreamWaitValue32_v2_ptsz",
	[661] = "cuStreamWaitValue64_v2",
	[662] = "cuStreamWaitValue64_v2_ptsz",
	[663] = "cuStreamWriteValue32_v2",
	[664] = "cuStreamWriteValue32_v2_ptsz",
	[665] = "cuStreamWriteValue64_v2",
	[666] = "cuStreamWriteValue64_v2_ptsz",
	[667] = "cuStreamBatchMemOp_v2",
	[668] = "cuStreamBatchMemOp_v2_ptsz",
	[669] = "cuGraphAddBatchMemOpNode",
	[670] = "cuGraphBatchMemOpNodeGetParams",
	[671] = "cuGraphBatchMemOpNodeSetParams",
	[672] = "cuGraphExecBatchMemOpNodeSetParams",
	[673] = "cuModuleGetLoadingMode",
	[674] = "cuMemGetHandleForAddressRange",
	[675] = "cuOccupancyMaxPotentialClusterSize",
	[676] = "cuOccupancyMaxActiveClusters",
	[677] = "cuGetProcAddress_v2",
	[678] = "cuLibraryLoadData",
	[679] = "cuLibraryLoadFromFile",
	[680] = "cuLibraryUnload",
	[681] = "cuLibraryGetKernel",
	[682] = "cuLibraryGetModule",
	[683] = "cuKernelGetFunction",
	[684] = "cuLibraryGetGlobal",
	[685] = "cuLibraryGetManaged",
	[686] = "cuKernelGetAttribute",
	[687] = "cuKernelSetAttribute",
	[688] = "cuKernelSetCacheConfig",
	[689] = "cuGraphAddKernelNode_v2",
	[690] = "cuGraphKernelNodeGetParams_v2",
	[691] = "cuGraphKernelNodeSetParams_v2",
	[692] = "cuGraphExecKernelNodeSetParams_v2",
	[693] = "cuStreamGetId",
	[694] = "cuStreamGetId_ptsz",
	[695] = "cuCtxGetId",
	[696] = "cuGraphExecUpdate_v2",
	[697] = "cuTensorMapEncodeTiled",
	[698] = "cuTensorMapEncodeIm2col",
	[699] = "cuTensorMapReplaceAddress",
	[700] = "cuLibraryGetUnifiedFunction",
	[701] = "cuCoredumpGetAttribute",
	[702] = "cuCoredumpGetAttributeGlobal",
	[703] = "cuCoredumpSetAttribute",
	[704] = "cuCoredumpSetAttributeGlobal",
	[705] = "cuCtxSetFlags",
	[706] = "cuMulticastCreate",
	[707] = "cuMulticastAddDevice",
	[708] = "cuMulticastBindMem",
	[709] = "cuMulticastBindAddr",
	[710] = "cuMulticastUnbind",
	[711] = "cuMulticastGetGranularity",
	[712] = "cuGraphAddNode",
	[713] = "cuGraphNodeSetParams",
	[714] = "cuGraphExecNodeSetParams",
	[715] = "cuMemAdvise_v2",
	[716] = "cuMemPrefetchAsync_v2",
	[717] = "cuMemPrefetchAsync_v2_ptsz",
	[718] = "cuFuncGetName",
	[719] = "cuKernelGetName",
	[720] = "cuStreamBeginCaptureToGraph",
	[721] = "cuStreamBeginCaptureToGraph_ptsz",
	[722] = "cuGraphConditionalHandleCreate",
	[723] = "cuGraphAddNode_v2",
	[724] = "cuGraphGetEdges_v2",
	[725] = "cuGraphNodeGetDependencies_v2",
	[726] = "cuGraphNodeGetDependentNodes_v2",
	[727] = "cuGraphAddDependencies_v2",
	[728] = "cuGraphRemoveDependencies_v2",
	[729] = "cuStreamGetCaptureInfo_v3",
	[730] = "cuStreamGetCaptureInfo_v3_ptsz",
	[731] = "cuStreamUpdateCaptureDependencies_v2",
	[732] = "cuStreamUpdateCaptureDependencies_v2_ptsz",
	[733] = "cuFuncGetParamInfo",
	[734] = "cuKernelGetParamInfo",
	[735] = "cuDeviceRegisterAsyncNotification",
	[736] = "cuDeviceUnregisterAsyncNotification",
	[737] = "cuModuleGetFunctionCount",
	[738] = "cuModuleEnumerateFunctions",
	[739] = "cuLibraryGetKernelCount",
	[740] = "cuLibraryEnumerateKernels",
	[741] = "cuFuncIsLoaded",
	[742] = "cuFuncLoad",
	[743] = "cuGreenCtxCreate",
	[744] = "cuGreenCtxDestroy",
	[745] = "cuDeviceGetDevResource",
	[746] = "cuCtxGetDevResource",
	[747] = "cuGreenCtxGetDevResource",
	[748] = "cuDevResourceGenerateDesc",
	[749] = "cuGreenCtxRecordEvent",
	[750] = "cuGreenCtxWaitEvent",
	[751] = "cuDevSmResourceSplitByCount",
	[752] = "cuStreamGetGreenCtx",
	[753] = "cuCtxFromGreenCtx",
	[754] = "cuKernelGetLibrary",
	[755] = "cuCtxRecordEvent",
	[756] = "cuCtxWaitEvent",
	[757] = "cuCtxCreate_v4",
	[758] = "cuGreenCtxStreamCreate",
	[759] = "cuStreamGetCtx_v2",
	[760] = "cuStreamGetCtx_v2_ptsz",
	[761] = "cuMemBatchDecompressAsync",
	[762] = "cuMemBatchDecompressAsync_ptsz",
	[763] = "cuLogsRegisterCallback",
	[764] = "cuLogsUnregisterCallback",
	[765] = "cuLogsCurrent",
	[766] = "cuLogsDumpToFile",
	[767] = "cuLogsDumpToMemory",
	[768] = "cuCheckpointProcessGetRestoreThreadId",
	[769] = "cuCheckpointProcessGetState",
	[770] = "cuCheckpointProcessLock",
	[771] = "cuCheckpointProcessCheckpoint",
	[772] = "cuCheckpointProcessRestore",
	[773] = "cuCheckpointProcessUnlock",
	[774] = "cuStreamGetDevice",
	[775] = "cuStreamGetDevice_ptsz",
	[776] = "cuMemcpyBatchAsync",
	[777] = "cuMemcpyBatchAsync_ptsz",
	[778] = "cuMemcpy3DBatchAsync",
	[779] = "cuMemcpy3DBatchAsync_ptsz",
	[780] = "cuEventElapsedTime_v2",
	[781] = "cuTensorMapEncodeIm2colWide",
	[782] = "cuGreenCtxGetId",
	[783] = "cuStreamCreateForCaptureToCig",
	[784] = "cuMemPrefetchBatchAsync",
	[785] = "cuMemPrefetchBatchAsync_ptsz",
	[786] = "cuSemaphoreCreate",
	[787] = "cuSemaphoreExport",
	[788] = "cuSemaphoreDestroy",
	[789] = "cuMemDiscardBatchAsync",
	[790] = "cuMemDiscardBatchAsync_ptsz",
	[791] = "cuMemDiscardAndPrefetchBatchAsync",
	[792] = "cuMemDiscardAndPrefetchBatchAsync_ptsz",
	[793] = "cuMultiKernelCooperativeDomainCreate",
	[794] = "cuMultiKernelCooperativeDomainDestroy",
	[795] = "cuCtxGetDevice_v2",
	[796] = "cuMemcpyBatchAsync_v2",
	[797] = "cuMemcpyBatchAsync_v2_ptsz",
	[798] = "cuMemcpy3DBatchAsync_v2",
	[799] = "cuMemcpy3DBatchAsync_v2_ptsz",
	[800] = "cuCtxSynchronize_v2",
	[801] = "cuMemGetDefaultMemPool",
	[802] = "cuMemGetMemPool",
	[803] = "cuMemSetMemPool",
	[804] = "cuDeviceGetP2PAtomicCapabilities",
	[805] = "cuDeviceGetHostAtomicCapabilities",
	[806] = "cuDriverGetGpuCodeIsaVersion",
};

static const struct {
	int code;
	const char *name;
} result_names[] = {
	{ 0, "CUPTI_SUCCESS" },
	{ 1, "CUPTI_ERROR_INVALID_PARAMETER" },
	{ 2, "CUPTI_ERROR_INVALID_DEVICE" },
	{ 3, "CUPTI_ERROR_INVALID_CONTEXT" },
	{ 4, "CUPTI_ERROR_INVALID_EVENT_DOMAIN_ID" },
	{ 5, "CUPTI_ERROR_INVALID_EVENT_ID" },
	{ 6, "CUPTI_ERROR_INVALID_EVENT_NAME" },
	{ 7, "CUPTI_ERROR_INVALID_OPERATION" },
	{ 8, "CUPTI_ERROR_OUT_OF_MEMORY" },
	{ 9, "CUPTI_ERROR_HARDWARE" },
	{ 10, "CUPTI_ERROR_PARAMETER_SIZE_NOT_SUFFICIENT" },
	{ 11, "CUPTI_ERROR_API_NOT_IMPLEMENTED" },
	{ 12, "CUPTI_ERROR_MAX_LIMIT_REACHED" },
	{ 13, "CUPTI_ERROR_NOT_READY" },
	{ 14, "CUPTI_ERROR_NOT_COMPATIBLE" },
	{ 15, "CUPTI_ERROR_NOT_INITIALIZED" },
	{ 16, "CUPTI_ERROR_INVALID_METRIC_ID" },
	{ 17, "CUPTI_ERROR_INVALID_METRIC_NAME" },
	{ 18, "CUPTI_ERROR_QUEUE_EMPTY" },
	{ 19, "CUPTI_ERROR_INVALID_HANDLE" },
	{ 20, "CUPTI_ERROR_INVALID_STREAM" },
	{ 21, "CUPTI_ERROR_INVALID_KIND" },
	{ 22, "CUPTI_ERROR_INVALID_EVENT_VALUE" },
	{ 23, "CUPTI_ERROR_DISABLED" },
	{ 24, "CUPTI_ERROR_INVALID_MODULE" },
	{ 25, "CUPTI_ERROR_INVALID_METRIC_VALUE" },
	{ 26, "CUPTI_ERROR_HARDWARE_BUSY" },
	{ 27, "CUPTI_ERROR_NOT_SUPPORTED" },
	{ 28, "CUPTI_ERROR_UM_PROFILING_NOT_SUPPORTED" },
	{ 29, "CUPTI_ERROR_UM_PROFILING_NOT_SUPPORTED_ON_DEVICE" },
	{ 30, "CUPTI_ERROR_UM_PROFILING_NOT_SUPPORTED_ON_NON_P2P_DEVICES" },
	{ 31, "CUPTI_ERROR_UM_PROFILING_NOT_SUPPORTED_WITH_MPS" },
	{ 32, "CUPTI_ERROR_CDP_TRACING_NOT_SUPPORTED" },
	{ 33, "CUPTI_ERROR_VIRTUALIZED_DEVICE_NOT_SUPPORTED" },
	{ 34, "CUPTI_ERROR_CUDA_COMPILER_NOT_COMPATIBLE" },
	{ 35, "CUPTI_ERROR_INSUFFICIENT_PRIVILEGES" },
	{ 36, "CUPTI_ERROR_OLD_PROFILER_API_INITIALIZED" },
	{ 37, "CUPTI_ERROR_OPENACC_UNDEFINED_ROUTINE" },
	{ 38, "CUPTI_ERROR_LEGACY_PROFILER_NOT_SUPPORTED" },
	{ 39, "CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED" },
	{ 40, "CUPTI_ERROR_VIRTUALIZED_DEVICE_INSUFFICIENT_PRIVILEGES" },
	{ 41, "CUPTI_ERROR_CONFIDENTIAL_COMPUTING_NOT_SUPPORTED" },
	{ 42, "CUPTI_ERROR_CMP_DEVICE_NOT_SUPPORTED" },
	{ 43, "CUPTI_ERROR_MIG_DEVICE_NOT_SUPPORTED" },
	{ 44, "CUPTI_ERROR_SLI_DEVICE_NOT_SUPPORTED" },
	{ 45, "CUPTI_ERROR_WSL_DEVICE_NOT_SUPPORTED" },
	{ 46, "CUPTI_ERROR_INVALID_CHIP_NAME" },
	{ 999, "CUPTI_ERROR_UNKNOWN" },
};

#define NELEM(a) (sizeof(a) / sizeof((a)[0]))

_Static_assert(CUPTI_RUNTIME_TRACE_CBID_SIZE <= CBID_MAX, "runtime cbids");
_Static_assert(CUPTI_DRIVER_TRACE_CBID_SIZE <= CBID_MAX, "driver cbids");

/* ---- state ---- */

struct CUpti_Subscriber_st {
	int unused;
};

/* One queued activity record, in its CUDA 13 layout. */
union slot {
	CUpti_Activity head;
	CUpti_ActivityKernel10 kernel;
	CUpti_ActivityMemcpy6 memcpy;
	CUpti_ActivityMemset4 memset;
	CUpti_ActivityMemory4 memory;
	CUpti_ActivityDevice5 device;
	CUpti_ActivityOverhead3 overhead;
};

struct name {
	uint64_t hash;
	char *s;
};

static struct {
	pthread_mutex_t lock;
	pthread_mutex_t flush_lock;
	int subscribe_result;
	int subscribed;
	CUpti_CallbackFunc callback;
	void *userdata;
	uint8_t enabled[CUPTI_CB_DOMAIN_SIZE][CBID_MAX];
	uint64_t seen[CUPTI_CB_DOMAIN_SIZE][CBID_MAX];
	uint8_t kind_enabled[CUPTI_ACTIVITY_KIND_COUNT];
	int kind_result[CUPTI_ACTIVITY_KIND_COUNT];
	CUpti_BuffersCallbackRequestFunc requested;
	CUpti_BuffersCallbackCompleteFunc completed;
	size_t q_head, q_len;	 /* ring of FAKE_CUPTI_QUEUE_CAP slots */
	uint64_t dropped_unread; /* for cuptiActivityGetNumDroppedRecords */
	uint64_t clock_ns;	 /* the fake GPU's timestamps */
	uint32_t correlation;
	uint32_t contexts;
	uint32_t current_context;
	struct name names[FAKE_CUPTI_NAMES_MAX];
	unsigned int nnames;
	struct fake_cupti_stats st;
} fake = {
	.lock = PTHREAD_MUTEX_INITIALIZER,
	.flush_lock = PTHREAD_MUTEX_INITIALIZER,
	.clock_ns = 1000000000ull,
};

static union slot queue[FAKE_CUPTI_QUEUE_CAP];
static struct CUpti_Subscriber_st the_subscriber;
static _Thread_local int in_flush;

static void lock(void)
{
	pthread_mutex_lock(&fake.lock);
}

static void unlock(void)
{
	pthread_mutex_unlock(&fake.lock);
}

/*
 * fork() while another thread (a flush) holds a lock: the child has only
 * the forking thread, so it starts over with unlocked mutexes.  No prepare
 * handler waits for the locks, as that would deadlock against a flushing
 * thread that needs the allocator lock a sanitizer's fork() holds.
 */
static void child_after_fork(void)
{
	pthread_mutex_init(&fake.lock, NULL);
	pthread_mutex_init(&fake.flush_lock, NULL);
	in_flush = 0;
}

__attribute__((constructor)) static void fake_load(void)
{
	pthread_atfork(NULL, NULL, child_after_fork);
}

__attribute__((destructor)) static void fake_unload(void)
{
	for (unsigned int i = 0; i < fake.nnames; i++) {
		free(fake.names[i].s);
		fake.names[i].s = NULL;
	}
	fake.nnames = 0;
}

static uint32_t domain_size(int domain)
{
	switch (domain) {
	case CUPTI_CB_DOMAIN_DRIVER_API:
		return CUPTI_DRIVER_TRACE_CBID_SIZE;
	case CUPTI_CB_DOMAIN_RUNTIME_API:
		return CUPTI_RUNTIME_TRACE_CBID_SIZE;
	case CUPTI_CB_DOMAIN_RESOURCE:
		return CUPTI_CBID_RESOURCE_SIZE;
	case CUPTI_CB_DOMAIN_SYNCHRONIZE:
		return CUPTI_CBID_SYNCHRONIZE_SIZE;
	case CUPTI_CB_DOMAIN_NVTX:
		return CUPTI_CBID_NVTX_SIZE;
	case CUPTI_CB_DOMAIN_STATE:
		return CUPTI_CBID_STATE_SIZE;
	default:
		return 0;
	}
}

static int cbid_valid(int domain, uint32_t cbid)
{
	return cbid > 0 && cbid < domain_size(domain);
}

static const char *name_of(int domain, uint32_t cbid)
{
	if (domain == CUPTI_CB_DOMAIN_RUNTIME_API &&
	    cbid < NELEM(runtime_names))
		return runtime_names[cbid];
	if (domain == CUPTI_CB_DOMAIN_DRIVER_API && cbid < NELEM(driver_names))
		return driver_names[cbid];
	return NULL;
}

static size_t record_size(uint32_t kind)
{
	switch (kind) {
	case CUPTI_ACTIVITY_KIND_KERNEL:
	case CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL:
		return sizeof(CUpti_ActivityKernel10);
	case CUPTI_ACTIVITY_KIND_MEMCPY:
		return sizeof(CUpti_ActivityMemcpy6);
	case CUPTI_ACTIVITY_KIND_MEMSET:
		return sizeof(CUpti_ActivityMemset4);
	case CUPTI_ACTIVITY_KIND_MEMORY2:
		return sizeof(CUpti_ActivityMemory4);
	case CUPTI_ACTIVITY_KIND_DEVICE:
		return sizeof(CUpti_ActivityDevice5);
	case CUPTI_ACTIVITY_KIND_OVERHEAD:
		return sizeof(CUpti_ActivityOverhead3);
	default:
		return 0;
	}
}

static void sleep_ns(uint64_t ns)
{
	struct timespec now, until;

	if (!ns)
		return;
	clock_gettime(CLOCK_MONOTONIC, &now);
	until.tv_sec = now.tv_sec + (time_t)(ns / 1000000000ull);
	until.tv_nsec = now.tv_nsec + (long)(ns % 1000000000ull);
	if (until.tv_nsec >= 1000000000L) {
		until.tv_sec++;
		until.tv_nsec -= 1000000000L;
	}
	while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &until, NULL) ==
	       EINTR)
		;
}

/* ---- callback API ---- */

CUptiResult CUPTIAPI cuptiSubscribe(CUpti_SubscriberHandle *subscriber,
				    CUpti_CallbackFunc callback, void *userdata)
{
	CUptiResult r = CUPTI_SUCCESS;

	lock();
	fake.st.subscribe_calls++;
	if (!subscriber || !callback) {
		fake.st.misuse++;
		r = CUPTI_ERROR_INVALID_PARAMETER;
	} else if (fake.subscribe_result) {
		r = (CUptiResult)fake.subscribe_result;
	} else if (fake.subscribed) {
		r = CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED;
	} else {
		fake.subscribed = 1;
		fake.callback = callback;
		fake.userdata = userdata;
		*subscriber = &the_subscriber;
	}
	unlock();
	return r;
}

CUptiResult CUPTIAPI cuptiUnsubscribe(CUpti_SubscriberHandle subscriber)
{
	CUptiResult r = CUPTI_SUCCESS;

	lock();
	if (subscriber != &the_subscriber || !fake.subscribed) {
		fake.st.misuse++;
		r = CUPTI_ERROR_INVALID_PARAMETER;
	} else {
		fake.subscribed = 0;
		fake.callback = NULL;
		fake.userdata = NULL;
		memset(fake.enabled, 0, sizeof(fake.enabled));
	}
	unlock();
	return r;
}

CUptiResult CUPTIAPI cuptiEnableCallback(uint32_t enable,
					 CUpti_SubscriberHandle subscriber,
					 CUpti_CallbackDomain domain,
					 CUpti_CallbackId cbid)
{
	CUptiResult r = CUPTI_SUCCESS;

	lock();
	if (subscriber != &the_subscriber || !fake.subscribed ||
	    !cbid_valid(domain, cbid)) {
		fake.st.misuse++;
		r = CUPTI_ERROR_INVALID_PARAMETER;
	} else {
		fake.enabled[domain][cbid] = enable != 0;
	}
	unlock();
	return r;
}

CUptiResult CUPTIAPI cuptiEnableDomain(uint32_t enable,
				       CUpti_SubscriberHandle subscriber,
				       CUpti_CallbackDomain domain)
{
	CUptiResult r = CUPTI_SUCCESS;
	uint32_t n = domain_size(domain);

	lock();
	if (subscriber != &the_subscriber || !fake.subscribed || !n) {
		fake.st.misuse++;
		r = CUPTI_ERROR_INVALID_PARAMETER;
	} else {
		for (uint32_t i = 1; i < n; i++)
			fake.enabled[domain][i] = enable != 0;
	}
	unlock();
	return r;
}

CUptiResult CUPTIAPI cuptiGetCallbackName(CUpti_CallbackDomain domain,
					  uint32_t cbid, const char **name)
{
	const char *s = name_of(domain, cbid);

	if (!name)
		return CUPTI_ERROR_INVALID_PARAMETER;
	*name = s;
	return s ? CUPTI_SUCCESS : CUPTI_ERROR_INVALID_PARAMETER;
}

/* ---- activity API ---- */

CUptiResult CUPTIAPI cuptiActivityEnable(CUpti_ActivityKind kind)
{
	CUptiResult r = CUPTI_SUCCESS;

	if ((unsigned int)kind >= CUPTI_ACTIVITY_KIND_COUNT ||
	    kind == CUPTI_ACTIVITY_KIND_INVALID)
		return CUPTI_ERROR_INVALID_KIND;
	lock();
	if (fake.kind_result[kind])
		r = (CUptiResult)fake.kind_result[kind];
	else
		fake.kind_enabled[kind] = 1;
	unlock();
	return r;
}

CUptiResult CUPTIAPI cuptiActivityDisable(CUpti_ActivityKind kind)
{
	if ((unsigned int)kind >= CUPTI_ACTIVITY_KIND_COUNT ||
	    kind == CUPTI_ACTIVITY_KIND_INVALID)
		return CUPTI_ERROR_INVALID_KIND;
	lock();
	fake.kind_enabled[kind] = 0;
	unlock();
	return CUPTI_SUCCESS;
}

CUptiResult CUPTIAPI
cuptiActivityRegisterCallbacks(CUpti_BuffersCallbackRequestFunc requested,
			       CUpti_BuffersCallbackCompleteFunc completed)
{
	if (!requested || !completed)
		return CUPTI_ERROR_INVALID_PARAMETER;
	lock();
	fake.requested = requested;
	fake.completed = completed;
	unlock();
	return CUPTI_SUCCESS;
}

/* Moves queued records into buf; returns the bytes used. */
static size_t fill_buffer(uint8_t *buf, size_t size, size_t max_records)
{
	size_t used = 0, n = 0;

	while (fake.q_len && (!max_records || n < max_records)) {
		union slot *s = &queue[fake.q_head];
		size_t len = record_size(s->head.kind);

		if (size - used < len)
			break;
		memcpy(buf + used, s, len);
		used += len;
		n++;
		fake.q_head = (fake.q_head + 1) % FAKE_CUPTI_QUEUE_CAP;
		fake.q_len--;
	}
	fake.st.delivered += n;
	return used;
}

/*
 * Hands every queued record to the client: request a buffer, fill it,
 * complete it, until the queue is empty.  A client that gives no buffer
 * (or one that cannot hold a record) loses the queued records, which
 * are counted as dropped.
 */
CUptiResult CUPTIAPI cuptiActivityFlushAll(uint32_t flag)
{
	CUpti_BuffersCallbackRequestFunc requested;
	CUpti_BuffersCallbackCompleteFunc completed;
	CUptiResult r = CUPTI_SUCCESS;

	if (in_flush) {
		lock();
		fake.st.misuse++;
		unlock();
		return CUPTI_ERROR_INVALID_OPERATION;
	}
	pthread_mutex_lock(&fake.flush_lock);
	in_flush = 1;
	lock();
	fake.st.flushes++;
	if (flag & CUPTI_ACTIVITY_FLAG_FLUSH_FORCED)
		fake.st.forced_flushes++;
	requested = fake.requested;
	completed = fake.completed;
	if (!requested) {
		fake.st.misuse++;
		r = CUPTI_ERROR_INVALID_OPERATION;
	}
	while (r == CUPTI_SUCCESS && fake.q_len) {
		uint8_t *buf = NULL;
		size_t size = 0, max_records = 0, valid;

		unlock();
		requested(&buf, &size, &max_records);
		lock();
		if (!buf || ((uintptr_t)buf & 7u) ||
		    size < sizeof(CUpti_ActivityKernel10)) {
			/* Real CUPTI drops what it cannot store. */
			fake.st.misuse += buf != NULL;
			fake.st.dropped += fake.q_len;
			fake.dropped_unread += fake.q_len;
			fake.q_head = (fake.q_head + fake.q_len) %
				      FAKE_CUPTI_QUEUE_CAP;
			fake.q_len = 0;
			if (!buf)
				break;
			/* The buffer goes back to its owner, empty. */
			valid = 0;
		} else {
			valid = fill_buffer(buf, size, max_records);
		}
		fake.st.buffers++;
		unlock();
		completed(NULL, 0, buf, size, valid);
		lock();
	}
	unlock();
	in_flush = 0;
	pthread_mutex_unlock(&fake.flush_lock);
	return r;
}

CUptiResult CUPTIAPI cuptiActivityGetNextRecord(uint8_t *buffer,
						size_t validBufferSizeBytes,
						CUpti_Activity **record)
{
	size_t off = 0, len;

	if (!buffer || !record)
		return CUPTI_ERROR_INVALID_PARAMETER;
	if (*record) {
		uint8_t *prev = (uint8_t *)*record;

		if (prev < buffer || prev >= buffer + validBufferSizeBytes)
			return CUPTI_ERROR_INVALID_PARAMETER;
		len = record_size((*record)->kind);
		if (!len)
			return CUPTI_ERROR_INVALID_KIND;
		off = (size_t)(prev - buffer) + len;
	}
	if (off >= validBufferSizeBytes)
		return CUPTI_ERROR_MAX_LIMIT_REACHED;
	if (validBufferSizeBytes - off < sizeof(CUpti_Activity))
		return CUPTI_ERROR_INVALID_KIND;
	len = record_size(((CUpti_Activity *)(buffer + off))->kind);
	if (!len || validBufferSizeBytes - off < len)
		return CUPTI_ERROR_INVALID_KIND;
	*record = (CUpti_Activity *)(buffer + off);
	return CUPTI_SUCCESS;
}

CUptiResult CUPTIAPI cuptiActivityGetNumDroppedRecords(CUcontext context,
						       uint32_t streamId,
						       size_t *dropped)
{
	(void)context;
	(void)streamId;
	if (!dropped)
		return CUPTI_ERROR_INVALID_PARAMETER;
	lock();
	*dropped = (size_t)fake.dropped_unread;
	fake.dropped_unread = 0;
	unlock();
	return CUPTI_SUCCESS;
}

/* ---- misc ---- */

CUptiResult CUPTIAPI cuptiGetResultString(CUptiResult result, const char **str)
{
	if (!str)
		return CUPTI_ERROR_INVALID_PARAMETER;
	for (size_t i = 0; i < NELEM(result_names); i++) {
		if (result_names[i].code == (int)result) {
			*str = result_names[i].name;
			return CUPTI_SUCCESS;
		}
	}
	*str = NULL;
	return CUPTI_ERROR_INVALID_PARAMETER;
}

CUptiResult CUPTIAPI cuptiGetVersion(uint32_t *version)
{
	if (!version)
		return CUPTI_ERROR_INVALID_PARAMETER;
	*version = CUPTI_API_VERSION;
	return CUPTI_SUCCESS;
}

/* ---- control API: callbacks ---- */

void fake_cupti_set_subscribe_result(int result)
{
	lock();
	fake.subscribe_result = result;
	unlock();
}

void fake_cupti_set_activity_result(int kind, int result)
{
	if (kind <= 0 || kind >= CUPTI_ACTIVITY_KIND_COUNT)
		return;
	lock();
	fake.kind_result[kind] = result;
	unlock();
}

int fake_cupti_subscribed(void)
{
	int r;

	lock();
	r = fake.subscribed;
	unlock();
	return r;
}

int fake_cupti_activity_enabled(int kind)
{
	int r = 0;

	if (kind <= 0 || kind >= CUPTI_ACTIVITY_KIND_COUNT)
		return 0;
	lock();
	r = fake.kind_enabled[kind];
	unlock();
	return r;
}

int fake_cupti_callback_enabled(int domain, uint32_t cbid)
{
	int r;

	if (!cbid_valid(domain, cbid))
		return 0;
	lock();
	r = fake.subscribed && fake.enabled[domain][cbid];
	unlock();
	return r;
}

unsigned int fake_cupti_enabled_count(void)
{
	unsigned int n = 0;

	lock();
	for (int d = 0; d < CUPTI_CB_DOMAIN_SIZE; d++)
		for (uint32_t i = 0; i < CBID_MAX; i++)
			n += fake.enabled[d][i];
	for (int k = 0; k < CUPTI_ACTIVITY_KIND_COUNT; k++)
		n += fake.kind_enabled[k];
	unlock();
	return n;
}

const char *fake_cupti_callback_name(int domain, uint32_t cbid)
{
	return name_of(domain, cbid);
}

uint64_t fake_cupti_callbacks_seen(int domain, uint32_t cbid)
{
	uint64_t n;

	if (!cbid_valid(domain, cbid))
		return 0;
	lock();
	n = fake.seen[domain][cbid];
	unlock();
	return n;
}

/* One API call's callback state, shared by its ENTER and EXIT. */
struct call {
	int domain;
	uint32_t cbid;
	int deliver;
	CUpti_CallbackFunc fn;
	void *userdata;
	CUpti_CallbackData data;
	uint64_t correlation_data; /* the subscriber's slot */
	int ret;		   /* cudaError_t or CUresult */
};

static void call_enter(struct call *c, int domain, uint32_t cbid)
{
	memset(c, 0, sizeof(*c));
	c->domain = domain;
	c->cbid = cbid;
	lock();
	c->deliver = cbid_valid(domain, cbid) && fake.subscribed &&
		     fake.enabled[domain][cbid];
	c->fn = fake.callback;
	c->userdata = fake.userdata;
	c->data.correlationId = ++fake.correlation;
	c->data.context =
		fake.current_context
			? (CUcontext)(uintptr_t)(0x7f0000001000ull +
						 fake.current_context *
							 0x1000ull)
			: NULL;
	c->data.contextUid = fake.current_context;
	if (c->deliver)
		fake.st.callbacks++;
	unlock();
	if (!c->deliver)
		return;
	c->data.callbackSite = CUPTI_API_ENTER;
	c->data.functionName = name_of(domain, cbid);
	c->data.functionParams = NULL;
	c->data.functionReturnValue = &c->ret;
	c->data.symbolName = NULL;
	c->data.correlationData = &c->correlation_data;
	c->fn(c->userdata, (CUpti_CallbackDomain)domain, cbid, &c->data);
}

static void call_exit(struct call *c, int ret)
{
	c->ret = ret;
	if (!c->deliver)
		return;
	lock();
	fake.st.callbacks++;
	fake.seen[c->domain][c->cbid]++;
	unlock();
	c->data.callbackSite = CUPTI_API_EXIT;
	c->fn(c->userdata, (CUpti_CallbackDomain)c->domain, c->cbid, &c->data);
}

int fake_cupti_api_call(int domain, uint32_t cbid, int ret, uint64_t busy_ns)
{
	struct call c;

	call_enter(&c, domain, cbid);
	sleep_ns(busy_ns);
	call_exit(&c, ret);
	return ret;
}

int fake_cupti_api_call_params(int domain, uint32_t cbid, int ret,
			       const void *params, const char *symbol)
{
	struct call c;

	call_enter(&c, domain, cbid);
	c.data.functionParams = params;
	c.data.symbolName = symbol;
	call_exit(&c, ret);
	return ret;
}

int fake_cupti_api_call_nested(int domain, uint32_t cbid, int ret,
			       int inner_domain, uint32_t inner_cbid,
			       int inner_ret, uint64_t busy_ns)
{
	struct call outer, inner;

	call_enter(&outer, domain, cbid);
	call_enter(&inner, inner_domain, inner_cbid);
	sleep_ns(busy_ns);
	call_exit(&inner, inner_ret);
	call_exit(&outer, ret);
	return ret;
}

static void resource_callback(uint32_t cbid, uint32_t context)
{
	CUpti_ResourceData data;
	CUpti_CallbackFunc fn;
	void *userdata;
	int deliver;

	lock();
	deliver =
		fake.subscribed && fake.enabled[CUPTI_CB_DOMAIN_RESOURCE][cbid];
	fn = fake.callback;
	userdata = fake.userdata;
	unlock();
	if (!deliver)
		return;
	memset(&data, 0, sizeof(data));
	data.context =
		(CUcontext)(uintptr_t)(0x7f0000001000ull + context * 0x1000ull);
	fn(userdata, CUPTI_CB_DOMAIN_RESOURCE, cbid, &data);
}

uint32_t fake_cupti_context_create(uint32_t device)
{
	uint32_t id;

	(void)device;
	lock();
	id = ++fake.contexts;
	fake.current_context = id;
	unlock();
	resource_callback(CUPTI_CBID_RESOURCE_CONTEXT_CREATED, id);
	return id;
}

void fake_cupti_context_destroy(uint32_t context)
{
	resource_callback(CUPTI_CBID_RESOURCE_CONTEXT_DESTROY_STARTING,
			  context);
	lock();
	if (fake.current_context == context)
		fake.current_context = 0;
	unlock();
}

/* ---- control API: activity records ---- */

/* Reserves the next queue slot for kind; NULL when not queued (*res). */
static union slot *slot_get(uint32_t kind, int *res)
{
	union slot *s;

	if (!fake.kind_enabled[kind]) {
		fake.st.discarded++;
		*res = FAKE_CUPTI_DISCARDED;
		return NULL;
	}
	if (fake.q_len == FAKE_CUPTI_QUEUE_CAP) {
		fake.st.dropped++;
		fake.dropped_unread++;
		*res = FAKE_CUPTI_DROPPED;
		return NULL;
	}
	s = &queue[(fake.q_head + fake.q_len) % FAKE_CUPTI_QUEUE_CAP];
	memset(s, 0, sizeof(*s));
	s->head.kind = (CUpti_ActivityKind)kind;
	fake.q_len++;
	fake.st.queued++;
	*res = FAKE_CUPTI_QUEUED;
	return s;
}

/* The fake GPU's clock: each operation starts 1 us after the last one. */
static uint64_t gpu_span(uint64_t duration_ns, uint64_t *end)
{
	uint64_t start = fake.clock_ns + 1000;

	*end = start + duration_ns;
	fake.clock_ns = *end;
	return start;
}

static uint64_t fnv1a(const char *s)
{
	uint64_t h = 0xcbf29ce484222325ull;

	for (; *s; s++) {
		h ^= (uint8_t)*s;
		h *= 0x100000001b3ull;
	}
	return h;
}

/* Kernel names live as long as the fake, like CUPTI's string table. */
static const char *intern(const char *s)
{
	uint64_t h = fnv1a(s);
	char *copy;

	for (unsigned int i = 0; i < fake.nnames; i++)
		if (fake.names[i].hash == h && !strcmp(fake.names[i].s, s))
			return fake.names[i].s;
	if (fake.nnames == FAKE_CUPTI_NAMES_MAX)
		return NULL;
	copy = strdup(s);
	if (!copy)
		return NULL;
	fake.names[fake.nnames].hash = h;
	fake.names[fake.nnames].s = copy;
	fake.nnames++;
	return copy;
}

int fake_cupti_push_kernel(const struct fake_cupti_kernel *k)
{
	CUpti_ActivityKernel10 *r;
	uint32_t kind = CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL;
	const char *name;
	union slot *s;
	int res;

	if (!k || !k->name)
		return FAKE_CUPTI_DISCARDED;
	lock();
	if (!fake.kind_enabled[kind] &&
	    fake.kind_enabled[CUPTI_ACTIVITY_KIND_KERNEL])
		kind = CUPTI_ACTIVITY_KIND_KERNEL;
	s = slot_get(kind, &res);
	if (!s)
		goto out;
	name = intern(k->name);
	r = &s->kernel;
	r->registersPerThread = k->registers;
	r->start = gpu_span(k->duration_ns, &r->end);
	r->completed = r->end;
	r->deviceId = k->device;
	r->contextId = k->context ? k->context : fake.current_context;
	r->streamId = k->stream ? k->stream : 7;
	r->gridX = k->grid[0];
	r->gridY = k->grid[1];
	r->gridZ = k->grid[2];
	r->blockX = k->block[0];
	r->blockY = k->block[1];
	r->blockZ = k->block[2];
	r->staticSharedMemory = k->static_smem;
	r->dynamicSharedMemory = k->dynamic_smem;
	r->localMemoryPerThread = k->local_mem;
	r->localMemoryTotal = k->local_mem * 1024u;
	r->correlationId = ++fake.correlation;
	r->gridId = (int64_t)fake.st.queued;
	r->name = name ? name : "<fake_cupti: name table full>";
	r->queued = r->start - 500;
	r->submitted = r->start - 200;
	r->launchType = CUPTI_ACTIVITY_LAUNCH_TYPE_REGULAR;
	r->sharedMemoryExecuted = (uint32_t)(k->static_smem + k->dynamic_smem);
	r->clusterX = r->clusterY = r->clusterZ = 1;
out:
	unlock();
	return res;
}

int fake_cupti_push_memcpy(int copy_kind, uint64_t bytes, uint64_t duration_ns)
{
	union slot *s;
	int res;

	lock();
	s = slot_get(CUPTI_ACTIVITY_KIND_MEMCPY, &res);
	if (s) {
		CUpti_ActivityMemcpy6 *r = &s->memcpy;

		r->copyKind = (uint8_t)copy_kind;
		r->srcKind = copy_kind == CUPTI_ACTIVITY_MEMCPY_KIND_HTOD
				     ? CUPTI_ACTIVITY_MEMORY_KIND_PAGEABLE
				     : CUPTI_ACTIVITY_MEMORY_KIND_DEVICE;
		r->dstKind = copy_kind == CUPTI_ACTIVITY_MEMCPY_KIND_DTOH
				     ? CUPTI_ACTIVITY_MEMORY_KIND_PAGEABLE
				     : CUPTI_ACTIVITY_MEMORY_KIND_DEVICE;
		r->bytes = bytes;
		r->start = gpu_span(duration_ns, &r->end);
		r->contextId = fake.current_context;
		r->streamId = 7;
		r->correlationId = ++fake.correlation;
		r->runtimeCorrelationId = r->correlationId;
		r->copyCount = 1;
	}
	unlock();
	return res;
}

int fake_cupti_push_memset(uint64_t bytes, uint64_t duration_ns)
{
	union slot *s;
	int res;

	lock();
	s = slot_get(CUPTI_ACTIVITY_KIND_MEMSET, &res);
	if (s) {
		CUpti_ActivityMemset4 *r = &s->memset;

		r->bytes = bytes;
		r->start = gpu_span(duration_ns, &r->end);
		r->contextId = fake.current_context;
		r->streamId = 7;
		r->correlationId = ++fake.correlation;
		r->memoryKind = CUPTI_ACTIVITY_MEMORY_KIND_DEVICE;
	}
	unlock();
	return res;
}

int fake_cupti_push_memory(int op, uint64_t address, uint64_t bytes)
{
	union slot *s;
	int res;

	lock();
	s = slot_get(CUPTI_ACTIVITY_KIND_MEMORY2, &res);
	if (s) {
		CUpti_ActivityMemory4 *r = &s->memory;
		uint64_t end;

		r->memoryOperationType = (CUpti_ActivityMemoryOperationType)op;
		r->memoryKind = CUPTI_ACTIVITY_MEMORY_KIND_DEVICE;
		r->correlationId = ++fake.correlation;
		r->address = address;
		r->bytes = bytes;
		r->timestamp = gpu_span(0, &end);
		r->processId = (uint32_t)getpid();
		r->contextId = fake.current_context;
		r->memoryPoolConfig.memoryPoolType =
			CUPTI_ACTIVITY_MEMORY_POOL_TYPE_INVALID;
	}
	unlock();
	return res;
}

int fake_cupti_push_device(const struct fake_cupti_device *d)
{
	union slot *s;
	int res;

	if (!d)
		return FAKE_CUPTI_DISCARDED;
	lock();
	s = slot_get(CUPTI_ACTIVITY_KIND_DEVICE, &res);
	if (s) {
		CUpti_ActivityDevice5 *r = &s->device;

		r->globalMemoryBandwidth = 3352000000ull; /* KB/s */
		r->globalMemorySize = d->global_memory;
		r->constantMemorySize = 65536;
		r->l2CacheSize = 52428800;
		r->numThreadsPerWarp = 32;
		r->coreClockRate = 1980000;
		r->numMemcpyEngines = 5;
		r->numMultiprocessors = d->sms;
		r->maxIPC = 4;
		r->maxWarpsPerMultiprocessor = d->max_warps_per_sm;
		r->maxBlocksPerMultiprocessor = d->max_blocks_per_sm;
		r->maxSharedMemoryPerMultiprocessor = d->max_smem_per_sm;
		r->maxRegistersPerMultiprocessor = d->max_regs_per_sm;
		r->maxRegistersPerBlock = d->max_regs_per_block;
		r->maxSharedMemoryPerBlock = d->max_smem_per_block;
		r->maxThreadsPerBlock = d->max_threads_per_block;
		r->maxBlockDimX = 1024;
		r->maxBlockDimY = 1024;
		r->maxBlockDimZ = 64;
		r->maxGridDimX = 2147483647u;
		r->maxGridDimY = 65535;
		r->maxGridDimZ = 65535;
		r->computeCapabilityMajor = d->cc_major;
		r->computeCapabilityMinor = d->cc_minor;
		r->id = d->id;
		r->uuid.bytes[0] = (char)d->id;
		r->name = d->name;
		r->isCudaVisible = 1;
	}
	unlock();
	return res;
}

int fake_cupti_push_overhead(uint64_t duration_ns)
{
	union slot *s;
	int res;

	lock();
	s = slot_get(CUPTI_ACTIVITY_KIND_OVERHEAD, &res);
	if (s) {
		CUpti_ActivityOverhead3 *r = &s->overhead;

		r->overheadKind = CUPTI_ACTIVITY_OVERHEAD_CUPTI_BUFFER_FLUSH;
		r->objectKind = CUPTI_ACTIVITY_OBJECT_THREAD;
		r->objectId.pt.processId = (uint32_t)getpid();
		r->start = gpu_span(duration_ns, &r->end);
	}
	unlock();
	return res;
}

void fake_cupti_get_stats(struct fake_cupti_stats *out)
{
	if (!out)
		return;
	lock();
	*out = fake.st;
	unlock();
}

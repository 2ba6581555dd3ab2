/*
 * A real TFLite external delegate, for evalharness's tests only.
 *
 * It exports the two entry points of TFLite's external-delegate interface
 * (tflite_plugin_create_delegate / tflite_plugin_destroy_delegate), links against nothing
 * but libc, and talks to the runtime through the classic TfLiteDelegate / TfLiteContext C API:
 * the runtime hands Prepare() a TfLiteContext whose function pointers walk the graph and replace
 * node subsets with a delegate kernel. The delegate can claim float32 ADD and/or MUL nodes and
 * computes them itself (elementwise, or with one operand of a single element).
 *
 * Options ("key:value" pairs from delegate.external_delegate_options):
 *   log_file:PATH      append one line "key=value" per option received, in the order received
 *   claim:none|add|mul|all_supported   which nodes to take (default none: coverage 0 %)
 *   bias:FLOAT         added to every result the delegate computes (default 0), so a test can
 *                      tell the delegate's kernel produced an output, not the builtin one
 *   only_output:INDEX  claim only the supported node whose output is tensor INDEX (with bias:
 *                      one op computed wrongly, explain's planted defect; tensor indices, unlike
 *                      node indices, are the same in the sub-models explain cuts)
 *   graph_file:PATH    write the graph as seen through TfLiteContext (tensors, nodes), so a test
 *                      can compare it with the interpreter's own view and so check the layouts
 *   fail_create:1      report an error and return NULL from tflite_plugin_create_delegate
 *   fail_prepare:1     report an error and fail the delegate's Prepare
 * Any other key is accepted (and logged), as a vendor delegate would ignore options it does not use.
 */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---------------------------------------------------------------------------------------------
 * The part of TFLite's public C API used here, declared from its documentation
 * (tflite/core/c/common.h, c_api_types.h, builtin_op_data.h). Field order is the documented
 * "semi-ABI-stable" order: fields are only ever appended. Structs the runtime owns and only
 * passes to us by pointer (context, node, params) are declared up to the last field used; the
 * structs this library creates or passes by value (delegate, registration) are declared in full.
 * ------------------------------------------------------------------------------------------- */

typedef int EhStatus; /* TfLiteStatus */
enum { EH_OK = 0, EH_ERROR = 1 };
enum { EH_FLOAT32 = 1 };                               /* TfLiteType kTfLiteFloat32 */
enum { EH_OP_ADD = 0, EH_OP_MUL = 18, EH_OP_DELEGATE = 51 }; /* BuiltinOperator (schema) */

typedef struct EhIntArray { /* TfLiteIntArray */
  int size;
  int data[];
} EhIntArray;

typedef struct EhQuantParams { /* TfLiteQuantizationParams */
  float scale;
  int32_t zero_point;
} EhQuantParams;

typedef struct EhQuantization { /* TfLiteQuantization */
  int type;
  void* params;
} EhQuantization;

struct EhDelegate;

/* TfLiteTensor, complete: the context's tensor array is indexed with this stride. */
typedef struct EhTensor {
  int type;                  /* TfLiteType */
  void* data;                /* TfLitePtrUnion: a union of pointers */
  EhIntArray* dims;
  EhQuantParams params;
  int allocation_type;       /* TfLiteAllocationType */
  size_t bytes;
  const void* allocation;
  const char* name;
  struct EhDelegate* delegate;
  int buffer_handle;         /* TfLiteBufferHandle */
  bool data_is_stale;
  bool is_variable;
  EhQuantization quantization;
  void* sparsity;
  const EhIntArray* dims_signature;
} EhTensor;

typedef struct EhNode { /* TfLiteNode, prefix */
  EhIntArray* inputs;
  EhIntArray* outputs;
  EhIntArray* intermediates;
  EhIntArray* temporaries;
  void* user_data;
  void* builtin_data; /* ADD / MUL: a struct whose first field is the fused activation (int) */
} EhNode;

struct EhContext;

typedef struct EhRegistration { /* TfLiteRegistration, complete (passed by value) */
  void* (*init)(struct EhContext* context, const char* buffer, size_t length);
  void (*free)(struct EhContext* context, void* buffer);
  EhStatus (*prepare)(struct EhContext* context, EhNode* node);
  EhStatus (*invoke)(struct EhContext* context, EhNode* node);
  const char* (*profiling_string)(const struct EhContext* context, const EhNode* node);
  int32_t builtin_code;
  const char* custom_name;
  int version;
  void* registration_external;
  void* (*async_kernel)(struct EhContext* context, EhNode* node);
  uint64_t inplace_operator;
} EhRegistration;

typedef struct EhContext { /* TfLiteContext, prefix */
  size_t tensors_size;
  EhStatus (*GetExecutionPlan)(struct EhContext* context, EhIntArray** execution_plan);
  EhTensor* tensors;
  void* impl_;
  EhStatus (*ResizeTensor)(struct EhContext* context, EhTensor* tensor, EhIntArray* new_size);
  void (*ReportError)(struct EhContext* context, const char* msg, ...);
  EhStatus (*AddTensors)(struct EhContext* context, int tensors_to_add, int* first_new_tensor_index);
  EhStatus (*GetNodeAndRegistration)(struct EhContext* context, int node_index, EhNode** node,
                                     EhRegistration** registration);
  EhStatus (*ReplaceNodeSubsetsWithDelegateKernels)(struct EhContext* context,
                                                    EhRegistration registration,
                                                    const EhIntArray* nodes_to_replace,
                                                    struct EhDelegate* delegate);
} EhContext;

typedef struct EhDelegate { /* TfLiteDelegate, complete (allocated here) */
  void* data_;
  EhStatus (*Prepare)(EhContext* context, struct EhDelegate* delegate);
  EhStatus (*CopyFromBufferHandle)(EhContext* context, struct EhDelegate* delegate, int buffer_handle,
                                   EhTensor* tensor);
  EhStatus (*CopyToBufferHandle)(EhContext* context, struct EhDelegate* delegate, int buffer_handle,
                                 EhTensor* tensor);
  void (*FreeBufferHandle)(EhContext* context, struct EhDelegate* delegate, int* handle);
  int64_t flags;
  void* opaque_delegate_builder; /* must stay NULL: this is a classic (non-opaque) delegate */
} EhDelegate;

typedef struct EhDelegateParams { /* TfLiteDelegateParams: a delegate kernel's init() buffer */
  EhDelegate* delegate;
  EhIntArray* nodes_to_replace;
  EhIntArray* input_tensors;
  EhIntArray* output_tensors;
} EhDelegateParams;

/* --------------------------------------------------------------------------------------------- */

enum { CLAIM_ADD = 1, CLAIM_MUL = 2 };

typedef struct Settings {
  int claim; /* CLAIM_* bits */
  float bias;
  bool fail_prepare;
  char* graph_file;
  int only_output; /* -1: any */
} Settings;

typedef struct Op {
  int code;
  int in[2];
  int out;
} Op;

typedef struct Kernel { /* one delegated partition */
  int num_ops;
  Op* ops;
  int num_tensors;  /* of the context, when the kernel was made */
  float** internal; /* per tensor index: own buffer for a tensor that never leaves the partition */
  float bias;
} Kernel;

static char* copy_string(const char* s) {
  size_t n = strlen(s) + 1;
  char* out = malloc(n);
  if (out) memcpy(out, s, n);
  return out;
}

static size_t num_elements(const EhTensor* t) {
  size_t n = 1;
  if (!t->dims) return 0;
  for (int i = 0; i < t->dims->size; ++i) n *= (size_t)(t->dims->data[i] < 0 ? 0 : t->dims->data[i]);
  return n;
}

static int fused_activation(const EhNode* node) {
  return node->builtin_data ? *(const int*)node->builtin_data : 0;
}

/* A node this delegate can run: float32 ADD/MUL, no fused activation, same-size or scalar operand. */
static bool supported(const EhContext* context, const EhNode* node, const EhRegistration* reg, int claim) {
  if (!((reg->builtin_code == EH_OP_ADD && (claim & CLAIM_ADD)) ||
        (reg->builtin_code == EH_OP_MUL && (claim & CLAIM_MUL))))
    return false;
  if (reg->custom_name != NULL || node->inputs->size != 2 || node->outputs->size != 1) return false;
  if (fused_activation(node) != 0) return false;
  int ids[3] = {node->inputs->data[0], node->inputs->data[1], node->outputs->data[0]};
  for (int i = 0; i < 3; ++i) {
    if (ids[i] < 0 || (size_t)ids[i] >= context->tensors_size) return false;
    if (context->tensors[ids[i]].type != EH_FLOAT32) return false;
  }
  size_t a = num_elements(&context->tensors[ids[0]]);
  size_t b = num_elements(&context->tensors[ids[1]]);
  size_t out = num_elements(&context->tensors[ids[2]]);
  return (a == out || a == 1) && (b == out || b == 1) && out > 0;
}

static void write_int_array(FILE* f, const EhIntArray* a) {
  if (!a) return;
  for (int i = 0; i < a->size; ++i) fprintf(f, i ? ",%d" : "%d", a->data[i]);
}

/* The graph as this library reads it through the declared structs, for the layout test. */
static void dump_graph(EhContext* context, const EhIntArray* plan, const char* path) {
  FILE* f = fopen(path, "w");
  if (!f) return;
  fprintf(f, "tensors %zu\n", context->tensors_size);
  for (size_t i = 0; i < context->tensors_size; ++i) {
    const EhTensor* t = &context->tensors[i];
    fprintf(f, "tensor %zu type=%d bytes=%zu dims=", i, t->type, t->bytes);
    write_int_array(f, t->dims);
    fprintf(f, " name=%s\n", t->name ? t->name : "");
  }
  for (int i = 0; i < plan->size; ++i) {
    EhNode* node = NULL;
    EhRegistration* reg = NULL;
    if (context->GetNodeAndRegistration(context, plan->data[i], &node, &reg) != EH_OK) continue;
    fprintf(f, "node %d code=%d version=%d inputs=", plan->data[i], reg->builtin_code, reg->version);
    write_int_array(f, node->inputs);
    fprintf(f, " outputs=");
    write_int_array(f, node->outputs);
    fprintf(f, "\n");
  }
  fclose(f);
}

/* ---- the delegate kernel: one instance per partition ---- */

static bool contains(const EhIntArray* a, int value) {
  for (int i = 0; i < a->size; ++i)
    if (a->data[i] == value) return true;
  return false;
}

static void kernel_free(EhContext* context, void* buffer) {
  (void)context;
  Kernel* k = buffer;
  if (!k) return;
  if (k->internal)
    for (int i = 0; i < k->num_tensors; ++i) free(k->internal[i]);
  free(k->internal);
  free(k->ops);
  free(k);
}

static void* kernel_init(EhContext* context, const char* buffer, size_t length) {
  (void)length;
  const EhDelegateParams* params = (const EhDelegateParams*)buffer;
  const Settings* settings = params->delegate->data_;
  Kernel* k = calloc(1, sizeof(Kernel));
  if (!k) return NULL;
  k->bias = settings->bias;
  k->num_ops = params->nodes_to_replace->size;
  k->num_tensors = (int)context->tensors_size;
  k->ops = calloc((size_t)k->num_ops, sizeof(Op));
  k->internal = calloc((size_t)k->num_tensors, sizeof(float*));
  if (!k->ops || !k->internal) goto fail;
  for (int i = 0; i < k->num_ops; ++i) {
    EhNode* node = NULL;
    EhRegistration* reg = NULL;
    if (context->GetNodeAndRegistration(context, params->nodes_to_replace->data[i], &node, &reg) != EH_OK)
      goto fail;
    Op* op = &k->ops[i];
    op->code = reg->builtin_code;
    op->in[0] = node->inputs->data[0];
    op->in[1] = node->inputs->data[1];
    op->out = node->outputs->data[0];
    /* A result consumed only inside the partition gets no memory from the runtime's planner. */
    if (!contains(params->output_tensors, op->out)) {
      k->internal[op->out] = calloc(num_elements(&context->tensors[op->out]), sizeof(float));
      if (!k->internal[op->out]) goto fail;
    }
  }
  return k;
fail:
  kernel_free(context, k);
  return NULL;
}

static EhStatus kernel_prepare(EhContext* context, EhNode* node) {
  if (node->user_data == NULL) {
    context->ReportError(context, "evalharness test delegate: kernel was not initialised");
    return EH_ERROR;
  }
  return EH_OK;
}

static float* tensor_data(EhContext* context, const Kernel* k, int index) {
  if (index < k->num_tensors && k->internal[index]) return k->internal[index];
  return (float*)context->tensors[index].data;
}

static EhStatus kernel_invoke(EhContext* context, EhNode* node) {
  const Kernel* k = node->user_data;
  for (int i = 0; i < k->num_ops; ++i) {
    const Op* op = &k->ops[i];
    const float* a = tensor_data(context, k, op->in[0]);
    const float* b = tensor_data(context, k, op->in[1]);
    float* out = tensor_data(context, k, op->out);
    size_t n = num_elements(&context->tensors[op->out]);
    size_t na = num_elements(&context->tensors[op->in[0]]);
    size_t nb = num_elements(&context->tensors[op->in[1]]);
    if (!a || !b || !out) {
      context->ReportError(context, "evalharness test delegate: tensor without data");
      return EH_ERROR;
    }
    for (size_t j = 0; j < n; ++j) {
      float x = a[na == 1 ? 0 : j], y = b[nb == 1 ? 0 : j];
      out[j] = (op->code == EH_OP_ADD ? x + y : x * y) + k->bias;
    }
  }
  return EH_OK;
}

/* ---- the delegate ---- */

static EhStatus delegate_prepare(EhContext* context, EhDelegate* delegate) {
  const Settings* settings = delegate->data_;
  if (settings->fail_prepare) {
    context->ReportError(context, "evalharness test delegate: Prepare failed (fail_prepare:1)");
    return EH_ERROR;
  }
  if (settings->claim == 0 && settings->graph_file == NULL) return EH_OK; /* touch nothing */

  EhIntArray* plan_view = NULL;
  if (context->GetExecutionPlan(context, &plan_view) != EH_OK) return EH_ERROR;
  /* The runtime owns (and may reuse) that array: keep a copy. */
  size_t plan_bytes = sizeof(EhIntArray) + sizeof(int) * (size_t)plan_view->size;
  EhIntArray* plan = malloc(plan_bytes);
  EhIntArray* claimed = malloc(plan_bytes);
  if (!plan || !claimed) {
    free(plan);
    free(claimed);
    return EH_ERROR;
  }
  memcpy(plan, plan_view, plan_bytes);
  if (settings->graph_file) dump_graph(context, plan, settings->graph_file);

  claimed->size = 0;
  for (int i = 0; i < plan->size; ++i) {
    EhNode* node = NULL;
    EhRegistration* reg = NULL;
    if (context->GetNodeAndRegistration(context, plan->data[i], &node, &reg) != EH_OK) continue;
    if (!supported(context, node, reg, settings->claim)) continue;
    if (settings->only_output >= 0 && node->outputs->data[0] != settings->only_output) continue;
    claimed->data[claimed->size++] = plan->data[i];
  }

  EhStatus status = EH_OK;
  if (claimed->size > 0) {
    EhRegistration kernel;
    memset(&kernel, 0, sizeof(kernel));
    kernel.init = kernel_init;
    kernel.free = kernel_free;
    kernel.prepare = kernel_prepare;
    kernel.invoke = kernel_invoke;
    kernel.builtin_code = EH_OP_DELEGATE;
    kernel.custom_name = "EvalHarnessTestDelegate";
    kernel.version = 1;
    status = context->ReplaceNodeSubsetsWithDelegateKernels(context, kernel, claimed, delegate);
  }
  free(plan);
  free(claimed);
  return status;
}

static void report(void (*report_error)(const char*), const char* message) {
  if (report_error) report_error(message);
}

__attribute__((visibility("default"))) EhDelegate* tflite_plugin_create_delegate(
    char** options_keys, char** options_values, size_t num_options, void (*report_error)(const char*)) {
  /* Python's load_delegate passes the count as a C int; only the low 32 bits are meaningful. */
  size_t count = (size_t)(uint32_t)num_options;
  Settings* settings = calloc(1, sizeof(Settings));
  if (!settings) return NULL;
  settings->only_output = -1;
  const char* log_file = NULL;
  bool fail_create = false;
  char message[512];
  for (size_t i = 0; i < count; ++i) {
    const char* key = options_keys[i];
    const char* value = options_values[i];
    if (strcmp(key, "log_file") == 0) {
      log_file = value;
    } else if (strcmp(key, "claim") == 0) {
      if (strcmp(value, "none") == 0) {
        settings->claim = 0;
      } else if (strcmp(value, "add") == 0) {
        settings->claim = CLAIM_ADD;
      } else if (strcmp(value, "mul") == 0) {
        settings->claim = CLAIM_MUL;
      } else if (strcmp(value, "all_supported") == 0) {
        settings->claim = CLAIM_ADD | CLAIM_MUL;
      } else {
        snprintf(message, sizeof(message),
                 "evalharness test delegate: claim:%s is not one of none|add|mul|all_supported", value);
        report(report_error, message);
        fail_create = true;
      }
    } else if (strcmp(key, "bias") == 0) {
      char* end = NULL;
      settings->bias = strtof(value, &end);
      if (end == value || *end != '\0') {
        snprintf(message, sizeof(message), "evalharness test delegate: bias:%s is not a number", value);
        report(report_error, message);
        fail_create = true;
      }
    } else if (strcmp(key, "graph_file") == 0) {
      free(settings->graph_file);
      settings->graph_file = copy_string(value);
    } else if (strcmp(key, "only_output") == 0) {
      char* end = NULL;
      settings->only_output = (int)strtol(value, &end, 10);
      if (end == value || *end != '\0') {
        snprintf(message, sizeof(message), "evalharness test delegate: only_output:%s is not a tensor index", value);
        report(report_error, message);
        fail_create = true;
      }
    } else if (strcmp(key, "fail_prepare") == 0) {
      settings->fail_prepare = strcmp(value, "1") == 0;
    } else if (strcmp(key, "fail_create") == 0 && strcmp(value, "1") == 0) {
      report(report_error, "evalharness test delegate: refused to create a delegate (fail_create:1)");
      fail_create = true;
    }
  }
  if (log_file) {
    FILE* f = fopen(log_file, "a");
    if (f) {
      for (size_t i = 0; i < count; ++i) fprintf(f, "%s=%s\n", options_keys[i], options_values[i]);
      fclose(f);
    }
  }
  EhDelegate* delegate = fail_create ? NULL : calloc(1, sizeof(EhDelegate));
  if (!delegate) {
    free(settings->graph_file);
    free(settings);
    return NULL;
  }
  delegate->data_ = settings;
  delegate->Prepare = delegate_prepare;
  delegate->flags = 0;
  delegate->opaque_delegate_builder = NULL;
  return delegate;
}

__attribute__((visibility("default"))) void tflite_plugin_destroy_delegate(EhDelegate* delegate) {
  /* Python's Delegate finaliser calls this with NULL too, after a failed create. */
  if (!delegate) return;
  Settings* settings = delegate->data_;
  if (settings) free(settings->graph_file);
  free(settings);
  free(delegate);
}

/*
 * savedmodel.h: the C interface of the savedmodel native engine, which runs TensorFlow
 * SavedModels and frozen GraphDefs with no Python and no TensorFlow.
 *
 * Link with libsavedmodel.so (-lsavedmodel) or with libsavedmodel.a plus the system libraries
 * it needs (on Linux: -lgcc_s -lutil -lrt -lpthread -lm -ldl).
 * C99; the library is built for little-endian machines only. Build it from native/ with
 * `cargo build --release -p savedmodel-capi`: native/target/release/libsavedmodel.{so,a}.
 *
 * OWNERSHIP AND LIFETIMES
 *   - SM_Model and SM_Outputs are opaque handles. Each one a function returns is owned by the
 *     caller and freed exactly once with sm_model_free / sm_outputs_free (NULL is accepted).
 *   - Strings and arrays returned by sm_model_* (signature names, keys, dims) are owned by the
 *     model and stay valid and unchanged until sm_model_free.
 *   - Pointers returned by sm_outputs_* (keys, dims, data, string elements) are owned by the
 *     outputs and stay valid until sm_outputs_free. Outputs do not depend on the model: they
 *     may be freed before or after it.
 *   - sm_dtype_name returns static strings.
 *   - The library keeps no pointer the caller passes in beyond the call that receives it;
 *     input buffers are copied.
 *
 * ARGUMENTS (the caller's side of the contract; breaking it is undefined behaviour)
 *   - A handle argument is NULL or a live handle of that type returned by this library.
 *   - A `const char*` argument is NULL or a NUL-terminated string readable during the call.
 *   - An array argument holds at least as many readable elements as the call says it has;
 *     it may be NULL when that count is 0. An out-pointer is NULL or writable.
 *   What can be detected is an error, not a crash: NULL handles, strings and arrays (where
 *   elements are promised), strings that are not UTF-8, misaligned arrays, out-of-range
 *   indices, unknown dtypes, and buffer lengths or shapes that do not match.
 *
 * ERRORS
 *   Functions that can fail return a documented error value (NULL, 0, SM_RANK_ERROR or
 *   DT_INVALID = 0) and record a message, which sm_last_error() returns. Every function
 *   except sm_last_error, sm_dtype_name and the *_free functions first clears the message of
 *   the calling thread, so after any call sm_last_error() is non-NULL exactly when that call
 *   failed (use this where the error value is also a valid result, e.g. a count of 0).
 *   Messages name what is wrong: the signature and the available ones, the input with its
 *   expected dtype and shape, the ops the engine has no kernel for with their nodes and
 *   functions, the node whose kernel failed. No panic or exception crosses this interface:
 *   an internal error is reported as a failure like any other.
 *
 * THREAD-SAFETY
 *   - A model may be used from several threads at once: every function taking a model,
 *     sm_model_run included, may be called concurrently with the same model (variables the
 *     model's signatures assign are shared state, updated under locks). Only sm_model_free
 *     must not run while another call uses the model.
 *   - Outputs are read-only: any number of threads may read the same outputs concurrently;
 *     only sm_outputs_free must not run while another call uses them.
 *   - The error message is per thread.
 */
#ifndef SAVEDMODEL_H
#define SAVEDMODEL_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* A loaded model. */
typedef struct SM_Model SM_Model;
/* The outputs of one run. */
typedef struct SM_Outputs SM_Outputs;

/* TensorFlow's DataType enum values for the dtypes the engine supports. */
enum {
    SM_DT_INVALID = 0,
    SM_DT_FLOAT = 1,
    SM_DT_DOUBLE = 2,
    SM_DT_INT32 = 3,
    SM_DT_UINT8 = 4,
    SM_DT_INT16 = 5,
    SM_DT_INT8 = 6,
    SM_DT_STRING = 7,
    SM_DT_COMPLEX64 = 8,
    SM_DT_INT64 = 9,
    SM_DT_BOOL = 10,
    SM_DT_BFLOAT16 = 14,
    SM_DT_UINT16 = 17,
    SM_DT_COMPLEX128 = 18,
    SM_DT_HALF = 19,
    SM_DT_UINT32 = 22,
    SM_DT_UINT64 = 23
};

/* Rank values of the *_rank functions besides ranks >= 0. */
#define SM_RANK_UNKNOWN (-1)
#define SM_RANK_ERROR (-2)

/* The message of this thread's last call if it failed (see ERRORS), else NULL. The string is
 * valid until the next call into this library on this thread. */
const char* sm_last_error(void);

/* The name of DataType value `dtype` in numpy's spelling ("float32", "float16", "bfloat16",
 * "complex64", "bool", "string", ...), a static string; NULL for a value the engine does not
 * support. Does not touch sm_last_error. */
const char* sm_dtype_name(int dtype);

/* ---- Loading ---------------------------------------------------------------------------- */

/* Loads `path`: a directory is a SavedModel, whose MetaGraphDef tagged exactly `tags` is
 * loaded (comma-separated, spaces around tags ignored; NULL means "serve"; "" is the empty
 * tag-set); a file is a TensorFlow 1 frozen GraphDef (.pb), loaded as one signature
 * "serving_default" whose inputs are its placeholders and whose outputs are the nodes no
 * other node reads, each keyed by its node name (tags are ignored). Variables are restored
 * and the model's init op run. File-system ops of the model (asset reads, ...) may only touch
 * files inside its directory (for a frozen graph, the directory of the file).
 * `path` must be UTF-8. Returns a new model, or NULL on error (a missing or damaged file,
 * no such tag-set, ops the engine has no kernel for). */
SM_Model* sm_model_load(const char* path, const char* tags);

/* Frees a model; NULL is ignored. */
void sm_model_free(SM_Model* model);

/* ---- Signatures ------------------------------------------------------------------------- */

/* The number of signatures (0 on error). */
size_t sm_model_num_signatures(const SM_Model* model);

/* The name of signature `index`, in sorted order; NULL on error (index out of range). */
const char* sm_model_signature_name(const SM_Model* model, size_t index);

/* The number of inputs / outputs of signature `signature` (0 on error, e.g. no such
 * signature: check sm_last_error). Inputs and outputs are sorted by key. */
size_t sm_model_num_inputs(const SM_Model* model, const char* signature);
size_t sm_model_num_outputs(const SM_Model* model, const char* signature);

/* The key of input / output `index` of `signature`; NULL on error. */
const char* sm_model_input_key(const SM_Model* model, const char* signature, size_t index);
const char* sm_model_output_key(const SM_Model* model, const char* signature, size_t index);

/* The DataType value of input / output `index`; SM_DT_INVALID (0) on error. */
int sm_model_input_dtype(const SM_Model* model, const char* signature, size_t index);
int sm_model_output_dtype(const SM_Model* model, const char* signature, size_t index);

/* The declared rank of input / output `index`: >= 0, SM_RANK_UNKNOWN (-1) if the signature
 * does not say, SM_RANK_ERROR (-2) on error. */
int sm_model_input_rank(const SM_Model* model, const char* signature, size_t index);
int sm_model_output_rank(const SM_Model* model, const char* signature, size_t index);

/* The declared dimensions of input / output `index`: an array of rank values, -1 for an
 * unknown dimension. NULL when the rank is unknown (not an error: sm_last_error stays NULL)
 * or on error; for rank 0 a non-NULL pointer that must not be read. */
const int64_t* sm_model_input_dims(const SM_Model* model, const char* signature, size_t index);
const int64_t* sm_model_output_dims(const SM_Model* model, const char* signature, size_t index);

/* ---- Running ---------------------------------------------------------------------------- */

/* Runs `signature` on `n_inputs` inputs, every input of the signature exactly once, in any
 * order. Input i is described by the i-th element of each array:
 *   keys[i]          its key (UTF-8);
 *   dtypes[i]        its DataType value; it must be the signature's dtype for that key;
 *   ranks[i]         its rank (>= 0);
 *   shapes[i]        its ranks[i] dimensions (>= 0; may be NULL when ranks[i] is 0); they
 *                    must fit the signature's shape where that is known;
 *   data[i]          its elements, byte_lengths[i] bytes (may be NULL when that is 0):
 *     - numeric dtypes: row-major, little-endian, exactly elements x size bytes; float16 and
 *       bfloat16 as their 16-bit patterns, bool as one byte (0 false, else true), complex as
 *       (real, imaginary) pairs of float / double;
 *     - SM_DT_STRING (packed): one little-endian uint64 length per element (row-major),
 *       then the elements' bytes back to back, nothing after; elements are arbitrary bytes.
 *       E.g. {"ab", ""} is 2,0,0,0,0,0,0,0, 0,0,0,0,0,0,0,0, 'a','b' (18 bytes).
 * The buffers are copied; the caller may reuse them when the call returns. The arrays may be
 * NULL when n_inputs is 0.
 * Returns new outputs, in the signature's output order (sorted by key), or NULL on error:
 * no such signature (the message lists the available ones), a missing, unexpected or repeated
 * key, a dtype or shape that does not fit (the message names the input, the expected dtype
 * and shape), a byte length that does not match, or a failing kernel (the message names the
 * node). The model is not const: a run may assign the model's variables. */
SM_Outputs* sm_model_run(SM_Model* model, const char* signature, size_t n_inputs,
                         const char* const* keys, const int* dtypes,
                         const int64_t* const* shapes, const int* ranks,
                         const void* const* data, const size_t* byte_lengths);

/* ---- Outputs ---------------------------------------------------------------------------- */

/* The number of outputs (0 on error). */
size_t sm_outputs_count(const SM_Outputs* outputs);

/* The key of output `index`; NULL on error (index out of range). */
const char* sm_outputs_key(const SM_Outputs* outputs, size_t index);

/* The DataType value of output `index`; SM_DT_INVALID (0) on error. */
int sm_outputs_dtype(const SM_Outputs* outputs, size_t index);

/* The rank of output `index` (always known); SM_RANK_ERROR (-2) on error. */
int sm_outputs_rank(const SM_Outputs* outputs, size_t index);

/* The dimensions of output `index`, rank values; NULL on error; for rank 0 a non-NULL pointer
 * that must not be read. */
const int64_t* sm_outputs_dims(const SM_Outputs* outputs, size_t index);

/* The number of elements of output `index` (the product of its dims); 0 on error. */
size_t sm_outputs_num_elements(const SM_Outputs* outputs, size_t index);

/* The bytes of output `index` in the layout sm_model_run takes (numeric: little-endian
 * row-major, aligned for the element type; string: packed, so an output can be fed back as
 * is), and their number. NULL / 0 on error; when the length is 0 the pointer may be any
 * non-NULL value and must not be read. */
const void* sm_outputs_data(const SM_Outputs* outputs, size_t index);
size_t sm_outputs_byte_length(const SM_Outputs* outputs, size_t index);

/* Element `element` (row-major) of string output `index`: a pointer to its bytes, which are
 * NOT NUL-terminated and may contain NUL, with their number stored in *length (unless
 * `length` is NULL). NULL on error (not a string output, index out of range). */
const char* sm_outputs_string(const SM_Outputs* outputs, size_t index, size_t element,
                              size_t* length);

/* Frees outputs; NULL is ignored. */
void sm_outputs_free(SM_Outputs* outputs);

#ifdef __cplusplus
}
#endif

#endif /* SAVEDMODEL_H */

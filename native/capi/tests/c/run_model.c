/*
 * run_model: loads a model through the C interface, lists its signatures, runs
 * "serving_default" with inputs x (float32 [2,2]) and s (string [3]), prints the outputs, and
 * checks the error paths (unknown signature, wrong dtype, wrong byte length).
 *
 * usage: run_model MODEL_PATH [TAGS]
 * Prints a transcript on stdout; exits 0 when every check held, 1 otherwise.
 */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "savedmodel.h"

static int failures = 0;

static void check(int ok, const char* what) {
    if (!ok) {
        printf("FAILED: %s (last error: %s)\n", what,
               sm_last_error() ? sm_last_error() : "none");
        failures++;
    }
}

static void print_dims(const int64_t* dims, int rank) {
    if (rank == SM_RANK_UNKNOWN) {
        printf("unknown");
        return;
    }
    printf("[");
    for (int d = 0; d < rank; d++) {
        printf(d ? ",%" PRId64 : "%" PRId64, dims[d]);
    }
    printf("]");
}

static void list_signatures(const SM_Model* model) {
    size_t n = sm_model_num_signatures(model);
    for (size_t i = 0; i < n; i++) {
        const char* sig = sm_model_signature_name(model, i);
        printf("signature %s\n", sig);
        for (size_t k = 0; k < sm_model_num_inputs(model, sig); k++) {
            int rank = sm_model_input_rank(model, sig, k);
            printf("  input %s %s ", sm_model_input_key(model, sig, k),
                   sm_dtype_name(sm_model_input_dtype(model, sig, k)));
            print_dims(sm_model_input_dims(model, sig, k), rank);
            printf("\n");
        }
        for (size_t k = 0; k < sm_model_num_outputs(model, sig); k++) {
            int rank = sm_model_output_rank(model, sig, k);
            printf("  output %s %s ", sm_model_output_key(model, sig, k),
                   sm_dtype_name(sm_model_output_dtype(model, sig, k)));
            print_dims(sm_model_output_dims(model, sig, k), rank);
            printf("\n");
        }
    }
}

static void print_values(const SM_Outputs* outputs, size_t i) {
    size_t n = sm_outputs_num_elements(outputs, i);
    int dtype = sm_outputs_dtype(outputs, i);
    for (size_t e = 0; e < n; e++) {
        printf(e ? " " : "");
        if (dtype == SM_DT_STRING) {
            size_t len = 0;
            const char* bytes = sm_outputs_string(outputs, i, e, &len);
            printf("\"%.*s\"", (int)len, bytes);
        } else if (dtype == SM_DT_FLOAT) {
            float v;
            memcpy(&v, (const char*)sm_outputs_data(outputs, i) + e * sizeof v, sizeof v);
            printf("%g", v);
        } else {
            printf("?");
        }
    }
}

static void print_outputs(const SM_Outputs* outputs) {
    for (size_t i = 0; i < sm_outputs_count(outputs); i++) {
        printf("result %s %s ", sm_outputs_key(outputs, i),
               sm_dtype_name(sm_outputs_dtype(outputs, i)));
        print_dims(sm_outputs_dims(outputs, i), sm_outputs_rank(outputs, i));
        printf(" %zu bytes:", sm_outputs_byte_length(outputs, i));
        if (sm_outputs_num_elements(outputs, i)) printf(" ");
        print_values(outputs, i);
        printf("\n");
    }
}

/* The packed strings "ab", "", "c d": three uint64 lengths, then the bytes. */
static size_t pack_strings(unsigned char* out) {
    const char* items[3] = {"ab", "", "c d"};
    size_t at = 24;
    for (int i = 0; i < 3; i++) {
        uint64_t len = strlen(items[i]);
        for (int b = 0; b < 8; b++) out[i * 8 + b] = (unsigned char)(len >> (8 * b));
        memcpy(out + at, items[i], len);
        at += len;
    }
    return at;
}

int main(int argc, char** argv) {
    if (argc < 2) {
        fprintf(stderr, "usage: %s MODEL_PATH [TAGS]\n", argv[0]);
        return 2;
    }
    SM_Model* model = sm_model_load(argv[1], argc > 2 ? argv[2] : NULL);
    if (!model) {
        printf("load failed: %s\n", sm_last_error());
        return 1;
    }
    list_signatures(model);

    float x[4] = {1.5f, -2.0f, 3.0f, 4.25f};
    unsigned char s[64];
    size_t s_len = pack_strings(s);
    const char* keys[2] = {"x", "s"};
    int dtypes[2] = {SM_DT_FLOAT, SM_DT_STRING};
    int64_t x_shape[2] = {2, 2};
    int64_t s_shape[1] = {3};
    const int64_t* shapes[2] = {x_shape, s_shape};
    int ranks[2] = {2, 1};
    const void* data[2] = {x, s};
    size_t lengths[2] = {sizeof x, s_len};

    SM_Outputs* outputs =
        sm_model_run(model, "serving_default", 2, keys, dtypes, shapes, ranks, data, lengths);
    check(outputs != NULL, "run serving_default");
    check(sm_last_error() == NULL, "no error after a successful run");
    if (outputs) print_outputs(outputs);

    SM_Outputs* none =
        sm_model_run(model, "nope", 2, keys, dtypes, shapes, ranks, data, lengths);
    check(none == NULL, "unknown signature gives NULL");
    check(sm_last_error() && strstr(sm_last_error(), "no signature \"nope\""),
          "unknown signature message");
    printf("error: %s\n", sm_last_error());

    dtypes[0] = SM_DT_INT32;
    check(!sm_model_run(model, "serving_default", 2, keys, dtypes, shapes, ranks, data, lengths),
          "wrong dtype gives NULL");
    printf("error: %s\n", sm_last_error());
    dtypes[0] = SM_DT_FLOAT;

    lengths[0] = 12;
    check(!sm_model_run(model, "serving_default", 2, keys, dtypes, shapes, ranks, data, lengths),
          "wrong byte length gives NULL");
    printf("error: %s\n", sm_last_error());

    /* A string output fed back as an input: the packed layout is the same both ways. */
    if (outputs) {
        const void* t_data[2] = {x, sm_outputs_data(outputs, 0)};
        size_t t_lengths[2] = {sizeof x, sm_outputs_byte_length(outputs, 0)};
        SM_Outputs* again = sm_model_run(model, "serving_default", 2, keys, dtypes, shapes,
                                         ranks, t_data, t_lengths);
        check(again && sm_outputs_byte_length(again, 0) == s_len &&
                  memcmp(sm_outputs_data(again, 0), s, s_len) == 0,
              "string output fed back");
        sm_outputs_free(again);
    }

    sm_model_free(model);
    sm_outputs_free(outputs); /* outputs outlive their model */
    printf("%s\n", failures ? "checks failed" : "all checks passed");
    return failures ? 1 : 0;
}

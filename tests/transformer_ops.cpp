// tests/transformer_ops.cpp — the transformer-block ops' typed errors,
// kv_append's in-place property, attention's kv_len, embedding's ids,
// topk's order and both moving bf16 bit for bit, on the CPU policies (eigen,
// blocked, threaded); their numerics run through the validation suite's
// catalog.
#include "transformer_ops_checks.hpp"

namespace tc = transformer_checks;
namespace policy = kforge::policy;

TEST_CASE_TEMPLATE("gated: known values and typed errors", P, policy::eigen, policy::blocked<>, policy::threaded<>) {
  tc::check_gated<P>();
}

TEST_CASE_TEMPLATE("kv_append: writes rows [pos, pos + T) and nothing else; typed errors", P, policy::eigen,
                   policy::blocked<>, policy::threaded<>) {
  tc::check_kv_append_in_place<P, float>();
  tc::check_kv_append_in_place<P, kforge::half>();
  tc::check_kv_append_in_place<P, kforge::bfloat16>();
  tc::check_kv_append_errors<P>();
}

TEST_CASE_TEMPLATE("attention kv_len: keys [0, kv_len) of a longer cache; zero keys; typed errors", P, policy::eigen,
                   policy::blocked<>, policy::threaded<>) {
  tc::check_attention_kv_len<P>();
}

TEST_CASE_TEMPLATE("embedding: known rows, strided ids; ids out of range and wrong shapes are typed errors", P,
                   policy::eigen, policy::blocked<>, policy::threaded<>) {
  tc::check_embedding_values<P, float>();
  tc::check_embedding_values<P, kforge::half>();
  tc::check_embedding_values<P, kforge::bfloat16>();
  tc::check_embedding_errors<P>();
}

TEST_CASE_TEMPLATE("topk / argmax: NaN first, ties by position, exact values; bad k and shapes are typed errors", P,
                   policy::eigen, policy::blocked<>, policy::threaded<>) {
  tc::check_topk_order<P, float>();
  tc::check_topk_order<P, kforge::half>();
  tc::check_topk_order<P, kforge::bfloat16>();
  tc::check_argmax_rows<P, float>();
  tc::check_argmax_rows<P, kforge::half>();
  tc::check_topk_errors<P>();
}

TEST_CASE_TEMPLATE("embedding / topk: bf16 rows and values moved bit for bit, NaN payloads too", P, policy::eigen,
                   policy::blocked<>, policy::threaded<>) {
  tc::check_bf16_moved<P>();
}

void decode_run_sm90(Tensor q, Tensor k, Tensor v, Tensor o) {
  sm90_launch(q, k, v, o);
}

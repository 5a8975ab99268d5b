/* Placeholder translation unit for a layer that has no code yet. */
typedef int cp_layer_empty;

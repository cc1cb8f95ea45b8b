
*

Identity/0Identity	tensors_0*
T0
/
Identity/stringIdentity	tensors_0*
T0
;
IdentityN/2	IdentityN	tensors_0	tensors_1*
T
2

2
StopGradient/3StopGradient	tensors_0*
T0
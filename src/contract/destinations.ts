// The words of an email destination as the API says them. Part of the contract (src/contract/); no
// zod, so the dashboard's bundle takes them without it.

/** Who holds delivery to a destination: the workspace, or the operator for every workspace. */
export const DESTINATION_HOLDS = ['workspace', 'operator'] as const;
export type DestinationHold = (typeof DESTINATION_HOLDS)[number];
